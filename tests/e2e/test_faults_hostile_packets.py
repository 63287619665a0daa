"""Faults: hostile input on a live session. A raw socket sends 10^5 random and mutated packets
(TPAGENT_FAULTS_FULL=1: 10^6) to a server holding traced.c stopped at finished() and a stopped
trace of 20 frames in its buffer. Every packet must be answered within 5 s: '+' and a reply (an
error, the empty reply or a real answer; E05 for one longer than PacketSize), or '-' for a bad
checksum.
Afterwards nothing may have changed: qTStatus, every byte of the trace buffer (qTBuffer) and of
every frame as gdb reads it (QTFrame, g, traceframe-info, m of each block, qTV), the registers,
the stop reply, every readable mapping of the program (read around the server from
/proc/PID/mem); then gdb connects, finds the frames, and the program runs to its end as natively.

The packets come from a seeded generator (the seed is printed; TPAGENT_FAULTS_SEED=N repeats a
run): fully random payloads (printable, hex-and-separators, binary), and valid packets of every
kind (corpus()) mutated 1 to 3 times (byte and bit flips, truncation, splicing, huge, negative
and overflowing numbers, emptied fields, repeated separators, inserted junk, runs of '}'
escapes, '*' run-length junk, doubling). Most are framed correctly; some have a bad checksum,
are cut short (then the next packet may be NAKed once, and is resent as gdb would), come after
binary line noise, or are longer than PacketSize.

Excluded, after mutation (each final packet is classified as both servers read it: gdbserver
takes the payload as sent, tpagent undoes '}' escapes in all of it first), because they
legitimately change what is checked or harm the host:
- k, D, R, r, A, !, vKill, vRun, vAttach: end, restart or replace the program or the session;
- c, C, s, S, i, I, vCont with actions, vCtrlC: resume or signal the program (nothing here stops
  it again where it was);
- QTinit, QTStart, QTStop, QTBuffer:size: clear, restart or resize the trace;
- QTSave, vFile:setfs, vFile:unlink, vFile:pwrite, vFile:open with write/create flags (or of
  anything but a regular file or a folder, a FIFO's open would block): write host files;
- Z/z and B (the old breakpoint packet): breakpoints go into the program's code; b: a baud rate;
- G, and P/M/X unless they can only land outside the program: P of a register number no server
  has (0x10001..0x7fffffff), M/X at an address in the non-canonical hole (>= 2^47) or below
  mmap_min_addr, however leniently a server reads the number;
- qRcmd other than harmless monitor commands (exit, set debug 1, ...);
- QStartNoAckMode, QNonStop, QThreadEvents, QCatchSyscalls, QAgent, vStopped, vFlash: change the
  protocol or what stops the program.
Settings a packet may change, which gdb sets again when it connects (QTNotes, QTDisconnected,
QTBuffer:circular, the selected trace frame, H, qSupported's features), are set back before the
comparison. The stack mapping may have grown: a read below it makes the kernel extend it (with
gdbserver too); the pages added must be zeros. Tracepoint and variable definitions (QTDP, QTDPsrc,
QTDV, QTro, QTEnable/QTDisable) are not the trace, but what the packets defined can make gdb's
upload fail and gdb drop the connection, whatever the server (a fast tracepoint at an unreadable
address, a condition that does not parse): before gdb connects, gdb's own definitions are put
back (QTinit, which keeps the frames until the next QTStart, then the definitions as uploaded
before), and everything is compared once more.

gdbserver 13 ends the session within the first few dozen packets: a checksum or number that is
not hex ("Invalid hex digit"), a huge length ("ran out of memory while trying to allocate")
drop the connection.
"""

from __future__ import annotations

import os
import random
import re
import socket
import stat
import time
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path

import pytest

from rsp import RspClient, decode_rle, frame
from scenario import (
    TO_MAIN, Scenario, record_reliability, symbol_addresses, trace, tracepoint_rows, tracepoint_table
)

pytestmark = pytest.mark.tpagent_only("gdbserver 13 drops the connection on a checksum or number that is not hex")

PROGRAM = "traced"
ITERATIONS = 10  # record_hit and other_hit: a frame each per iteration
FRAMES = 2 * ITERATIONS
FULL = os.environ.get("TPAGENT_FAULTS_FULL") == "1"
PACKETS = 1_000_000 if FULL else 100_000
EXCHANGE_LIMIT = 5.0  # seconds: longer is a hang

# Where no write can land: the non-canonical hole of x86-64 (user space ends at 2^47, and a
# 5-level one maps above only on request), and the pages below mmap_min_addr.
HOLE = (0x0000_8000_0000_0000, 2**64 - 0x10000)
HOLE_ADDRESS = 0x0000_9000_0000_0000
MMAP_MIN = int(Path("/proc/sys/vm/mmap_min_addr").read_text())
# A register number no architecture has: both servers refuse P of it.
NO_REGISTER = (0x10001, 0x7FFF_FFFF)

RUNS_OR_ENDS = set("kDRrA!cCsSiIZzGbB")
EXCLUDED_PREFIXES = (
    "vKill", "vRun", "vAttach", "vCtrlC", "vStopped", "vFlash", "QTinit", "QTStart", "QTStop", "QTSave",
    "QStartNoAckMode", "QNonStop", "QThreadEvents", "QCatchSyscalls", "QAgent", "QThreadOptions",
)
HARMLESS_MONITOR = ("help", "set debug 0", "set debug off")
# Line noise between packets: anything but what starts a packet, acks or interrupts.
NOISE = bytes(b for b in range(256) if b not in b"$+-\x03")
RESYNC = "qTStatus"  # sent after a packet cut short: its bytes hold no '+', '-' or 0x03


def hexs(text: str) -> str:
    return text.encode().hex()


# --------------------------------------------------------------------------- classification


def unescaped(payload: bytes) -> bytes:
    """The payload as tpagent's framing hands it on: '}' X is X ^ 0x20, a last '}' dropped."""
    out, i = bytearray(), 0
    while i < len(payload):
        if payload[i] == 0x7D:
            if i + 1 < len(payload):
                out.append(payload[i + 1] ^ 0x20)
            i += 2
        else:
            out.append(payload[i])
            i += 1
    return bytes(out)


def lenient_number(text: str) -> int:
    """A number as the most lenient server reads it: its leading hex digits, low 64 bits."""
    digits = re.match(r"[0-9a-fA-F]*", text).group(0)
    return int(digits, 16) % 2**64 if digits else 0


def hex_text(text: str) -> str:
    """The leading whole hex pairs of TEXT, decoded."""
    return bytes.fromhex(re.match(r"(?:[0-9a-fA-F]{2})*", text).group(0)).decode("latin-1")


def write_outside(view: str) -> bool:
    """An M or X packet can only land where nothing is mapped."""
    address = lenient_number(view[1:])
    return HOLE[0] <= address <= HOLE[1] or address + len(view) < MMAP_MIN


def harmless_open(args: str) -> bool:
    """vFile:open's NAME,FLAGS,MODE: read-only, of a regular file, a folder or nothing."""
    fields = args.split(",")
    if lenient_number(fields[1] if len(fields) > 1 else "") & 0xE0B:  # WRONLY RDWR APPEND CREAT TRUNC EXCL
        return False
    try:
        mode = os.stat(hex_text(fields[0]).split("\0")[0]).st_mode
    except (OSError, ValueError):
        return True
    return stat.S_ISREG(mode) or stat.S_ISDIR(mode)


def exclusion(view: str) -> str | None:
    """Why a packet (as one server reads it) must not be sent, or None."""
    if not view:
        return None
    if view[0] in RUNS_OR_ENDS:
        return view[0]
    if view.startswith("vCont") and not view.startswith("vCont?"):
        return "vCont"
    for prefix in EXCLUDED_PREFIXES:
        if view.startswith(prefix):
            return prefix
    if view[0] in "MX" and not write_outside(view):
        return "memory write"
    if view[0] == "P":
        digits = re.match(r"[0-9a-fA-F]*", view[1:]).group(0)
        if not (digits and NO_REGISTER[0] <= int(digits, 16) <= NO_REGISTER[1]):
            return "register write"
    if view.startswith("QTBuffer") and not view[9:].startswith("circular"):
        return "QTBuffer:size"
    if view.startswith("vFile"):
        operation = view[6:]
        if operation.startswith(("setfs", "unlink", "pwrite")):
            return "vFile write"
        if operation.startswith("open") and not harmless_open(operation[5:]):
            return "vFile:open"
    if view.startswith("qRcmd"):
        command = hex_text(view[6:])
        if command not in HARMLESS_MONITOR and re.match(r"\s*(ex|se|ki|qu|de)", command, re.I):
            return "monitor command"
    return None


def excluded(payload: bytes) -> str | None:
    """Why PAYLOAD must not be sent, as gdbserver reads it or as tpagent does."""
    for view in (payload, unescaped(payload)):
        reason = exclusion(view.decode("latin-1"))
        if reason:
            return reason
    return None


# --------------------------------------------------------------------------- the packets


@dataclass
class Target:
    """What the corpus is made of: the session's real numbers."""

    pid: int
    pc: int
    sp: int
    symbols: dict[str, int]
    tracepoints: list[tuple[int, int]]
    raw_size: int
    program: str
    packet_size: int
    fds: list[int] = field(default_factory=list)  # files vFile:open gave


def corpus(t: Target) -> list[str]:
    """A valid packet of every kind, with the session's own addresses and numbers ("<fd>" is an
    open file's descriptor, when the packet is picked)."""
    sym = t.symbols
    code, table, hit, other = sym["main"], sym["table"], sym["record_hit"], sym["other_hit"]
    (n2, a2), (n3, a3) = t.tracepoints[:2]
    pid, hole = t.pid, HOLE_ADDRESS
    return [
        "?", "g", "p0", "p10", "p7", "p39", "p1000", "G" + "00" * 8, f"Z0,{hit:x},1", f"z0,{hit:x},1",
        f"Z2,{table:x},4", f"z4,{table:x},4", f"vCont;c:p{pid:x}.-1", f"vCont;s:p{pid:x}.{pid:x};c",
        f"m{t.pc:x},40", f"m{table:x},20", f"m{t.sp:x},100", "m0,4", f"m{code:x},4000", f"m{hole:x},8",
        f"M{hole:x},4:01020304", f"X{hole:x},0:", f"X{hole:x},5:ab}}]#$", "P20000=0000000000000000",
        f"x{code:x},10", f"qCRC:{code:x},100", f"qSearch:memory:{code:x};1000;{hexs('UH')}",
        "Hg0", f"Hg{pid:x}", "Hc-1", f"Hgp{pid:x}.{pid:x}", f"T{pid:x}", f"Tp{pid:x}.{pid:x}", "T1",
        "vCont?", "qC", "qAttached", "qfThreadInfo", "qsThreadInfo", "qOffsets", "qSymbol::",
        f"qThreadExtraInfo,{pid:x}", "vMustReplyEmpty", "qTfSTM", "qTsSTM", f"qTSTMat:{hit:x}",
        "qXfer:features:read:target.xml:0,fff", "qXfer:features:read:64bit-core.xml:0,1000",
        "qXfer:threads:read::0,fff", "qXfer:libraries-svr4:read::0,fff", "qXfer:libraries:read::0,fff",
        "qXfer:auxv:read::0,fff",
        f"qXfer:exec-file:read:{pid:x}:0,fff", "qXfer:traceframe-info:read::0,fff",
        "qXfer:traceframe-info:read::ffffffffffff,10", "qXfer:statictrace:read::0,fff",
        "qTStatus", f"qTP:{n2:x}:{a2:x}", f"qTP:{n3:x}:{a3:x}", "qTV:1", "qTV:2", "qTfP", "qTsP", "qTfV", "qTsV",
        f"QTDP:40:{hit:x}:E:0:0", f"QTDP:41:{other:x}:E:0:0-", f"QTDP:-41:{other:x}:R03-",
        f"QTDP:-41:{other:x}:M-1,{table:x},20-", f"QTDP:-41:{other:x}:X05,2600002700",
        f"QTDP:42:{hit:x}:D:3:5:F5", f"QTDP:43:{other:x}:E:1:2:X03,260227-", f"QTDP:-43:{other:x}:S",
        f"QTDP:-43:{other:x}:SR03", f"QTDP:{n2:x}:{a2:x}:E:0:0", f"QTDP:44:{hit:x}:E:0:0:S",
        f"QTDPsrc:40:{hit:x}:at:0:a:{hexs('record_hit')}", f"QTDPsrc:43:{other:x}:cond:0:5:{hexs('1 > 0')}",
        f"QTDPsrc:41:{other:x}:cmd:0:e:{hexs('collect table')}",
        f"QTDV:5:0:0:{hexs('fuzzed')}", f"QTDV:6:ffffffffffffffff:1:{hexs('other')}",
        f"QTro:{code:x},{code + 0x1000:x}", "QTro:", "QTro:0,ffffffffffffffff",
        f"QTEnable:{n2:x}:{a2:x}", f"QTDisable:{n3:x}:{a3:x}", "QTEnable:99:0", "QTDisable:40:0",
        "QTBuffer:circular:1", "QTBuffer:circular:0", "QTBuffer:size:1000",
        f"QTNotes:user:{hexs('fuzz')};notes:{hexs('notes')};tstop:{hexs('why')}",
        "QTDisconnected:1", "QTDisconnected:0",
        "QTFrame:0", "QTFrame:d", f"QTFrame:{FRAMES - 1:x}", f"QTFrame:{FRAMES:x}", "QTFrame:ffffffff", "QTFrame:-1",
        f"QTFrame:pc:{hit:x}", f"QTFrame:tdp:{n2:x}", f"QTFrame:tdp:{n3:x}",
        f"QTFrame:range:{hit:x}:{hit + 0x40:x}", f"QTFrame:outside:{hit:x}:{hit + 0x40:x}",
        "qTBuffer:0,100", f"qTBuffer:{max(t.raw_size - 16, 0):x},20", "qTBuffer:ffffffff,1", "qTBuffer:0,4000",
        "qTMinFTPILen", "qRelocInsn:5", "qRelocInsn:E01",
        "qSupported:multiprocess+;swbreak+;hwbreak+;qRelocInsn+;fork-events+;vContSupported+", "qSupported",
        f"qRcmd,{hexs('help')}", f"qRcmd,{hexs('set debug 0')}", f"qRcmd,{hexs('frobnicate')}",
        f"vFile:open:{hexs(f'/proc/{pid}/maps')},0,0", f"vFile:open:{hexs(t.program)},0,1ff",
        f"vFile:open:{hexs('/nonexistent')},0,0", "vFile:pread:<fd>,100,0", "vFile:pread:<fd>,4000,40",
        "vFile:close:<fd>", "vFile:fstat:<fd>", f"vFile:readlink:{hexs(f'/proc/{pid}/exe')}",
        "QPassSignals:e;14", "QProgramSignals:2;e", "QDisableRandomization:1", f"QEnvironmentHexEncoded:{hexs('A=1')}",
        f"QEnvironmentUnset:{hexs('A')}", "QEnvironmentReset", "qGetTLSAddr:1,0,0",
    ]


# Huge and overflowing numbers.
NUMBERS = (
    "f" * 16, "f" * 17, "1" + "0" * 16, "8" + "0" * 15, "f" * 40, "9" * 33, "ffffffff", "80000000", "0" * 31 + "1"
)


def mutate(rng: random.Random, data: bytes, other: bytes) -> bytes:
    """One mutation of DATA (OTHER: a second packet to splice with)."""
    n = len(data)
    # Mostly past the packet's name: its arguments reach the handler.
    name = re.match(rb"[^:,;]*", data).end() if data[:1] in (b"q", b"Q", b"v") else min(n, 1)
    at = rng.randrange(n + 1) if rng.random() < 0.25 else rng.randint(name, n)
    kind = rng.randrange(13)
    numbers = [m.span() for m in re.finditer(rb"[0-9a-fA-F]+", data)]
    separators = [m.start() for m in re.finditer(rb"[:,;=]", data)]
    if kind == 0 and n:  # a byte replaced
        return data[: at % n] + bytes([rng.randrange(256)]) + data[at % n + 1 :]
    if kind == 1 and n:  # a bit flipped
        return data[: at % n] + bytes([data[at % n] ^ (1 << rng.randrange(8))]) + data[at % n + 1 :]
    if kind == 2:  # cut short
        return data[:at]
    if kind == 3:  # spliced
        return data[:at] + other[rng.randrange(len(other) + 1) :]
    if kind in (4, 5, 6) and numbers:
        start, end = rng.choice(numbers)
        new = {
            4: rng.choice(NUMBERS),
            5: rng.choice(("-", "-1", "-0", "-ffffffff", "-8000000000000000")),  # negative
            6: "",  # an emptied field
        }[kind]
        if kind == 5 and new == "-":
            new = "-" + data[start:end].decode()
        return data[:start] + new.encode() + data[end:]
    if kind == 7 and separators:  # repeated separators
        pos = rng.choice(separators)
        return data[:pos] + data[pos : pos + 1] * rng.randint(2, 40) + data[pos + 1 :]
    if kind == 8:  # junk inserted
        return data[:at] + rng.randbytes(rng.randint(1, 16)) + data[at:]
    if kind == 9:  # a run of '}' escapes, at the end too
        pos = rng.choice((at, n))
        return data[:pos] + b"}" * rng.randint(1, 64) + data[pos:]
    if kind == 10:  # '*' run-length junk
        junk = b"".join(b"*" + bytes([rng.randrange(256)]) for _ in range(rng.randint(1, 8)))
        return data[:at] + junk + data[at:]
    if kind == 11:  # doubled
        return data + data
    if kind == 12 and n:  # a range deleted
        return data[:at] + data[at + rng.randint(1, 16) :]
    return data[:at] + b"," + data[at:]


def random_payload(rng: random.Random) -> bytes:
    length = rng.choice((rng.randint(0, 8), rng.randint(0, 64), rng.randint(0, 400), rng.randint(0, 3000)))
    alphabet = rng.choice((
        b"0123456789abcdef:,;=-",
        bytes(range(0x20, 0x7F)),
        b"qQvmMXgpPHTt?F0123456789abcdefTDPV:,;-}*",
        bytes(range(256)),
    ))
    return bytes(rng.choice(alphabet) for _ in range(length))


def unframeable(payload: bytes) -> bytes:
    """PAYLOAD with each raw '$' or '#' escaped: they would restart or end the packet."""
    return payload.replace(b"$", b"}\x04").replace(b"#", b"}\x03")


@dataclass(frozen=True)
class Wire:
    kind: str  # packet, overlong, bad-checksum, truncated
    data: bytes
    payload: bytes  # what gets classified


class Generator:
    """The hostile packets, from a seeded random generator."""

    def __init__(self, seed: int, target: Target) -> None:
        self.rng = random.Random(seed)
        self.target = target
        self.corpus = [p.encode("latin-1") for p in corpus(target)]
        self.excluded: Counter[str] = Counter()

    def pick(self) -> bytes:
        packet = self.rng.choice(self.corpus)
        if b"<fd>" in packet:
            fd = self.rng.choice(self.target.fds or [3, 7, 0x40])
            packet = packet.replace(b"<fd>", b"%x" % fd)
        return packet

    def payload(self) -> bytes:
        rng = self.rng
        roll = rng.random()
        if roll < 0.12:
            return self.pick()
        if roll < 0.30:
            return random_payload(rng)
        data = self.pick()
        for _ in range(rng.choice((1, 1, 2, 3))):
            data = mutate(rng, data, self.pick())
        return data

    def wire(self) -> Wire:
        rng = self.rng
        payload = unframeable(self.payload())
        roll = rng.random()
        if roll < 0.05:  # bad checksum: a wrong sum, or no hex at all
            good = frame(payload)
            wrong = b"%02x" % ((int(good[-2:], 16) + rng.randint(1, 255)) % 256)
            wrong = rng.choice((wrong, wrong, b"zz", b"g0", b"0 ", b"\xff\xfe"))
            return Wire("bad-checksum", good[:-2] + wrong, payload)
        if roll < 0.08:  # cut short: no '#', or half the checksum
            cut = frame(payload)[: rng.randint(1, len(frame(payload)) - 1)]
            if b"#" in cut:
                cut = cut[: cut.index(b"#") + rng.randint(1, 2)]
            return Wire("truncated", cut, payload)
        if roll < 0.11:  # after line noise
            noise = bytes(rng.choice(NOISE) for _ in range(rng.randint(1, 64)))
            return Wire("packet", noise + frame(payload), payload)
        if roll < 0.125:  # long: past PacketSize, or not once its '}' escapes are undone
            filler = rng.choice((b"a", b"0", b"}]", b",:"))
            payload += filler * ((self.target.packet_size + rng.randint(1, 4096)) // len(filler))
            overlong = len(unescaped(payload)) > self.target.packet_size
            return Wire("overlong" if overlong else "packet", frame(payload), payload)
        return Wire("packet", frame(payload), payload)

    def __iter__(self):
        while True:
            wire = self.wire()
            reason = excluded(wire.payload)
            if reason:
                self.excluded[reason] += 1
                continue
            yield wire


# --------------------------------------------------------------------------- the exchanges


@dataclass
class Tally:
    sent: int = 0
    errors: int = 0
    empty: int = 0
    answers: int = 0
    naks: int = 0
    overlong: int = 0
    resent: int = 0
    slowest: float = 0.0
    slowest_packet: bytes = b""

    def count(self, reply: str) -> None:
        if reply == "":
            self.empty += 1
        elif re.fullmatch(r"E[0-9a-fA-F]{2}|E\..*", reply, re.S):
            self.errors += 1
        else:
            self.answers += 1


def reply_to(rsp: RspClient, payload: bytes) -> str:
    """The reply to a packet acked with '+' (a monitor command's console output first)."""
    reply = rsp.read_packet()
    if unescaped(payload).startswith(b"qRcmd") or payload.startswith(b"qRcmd"):
        while reply.startswith("O") and reply != "OK":
            reply = rsp.read_packet()
    return reply


def exchange(rsp: RspClient, wire: Wire, tally: Tally) -> str | None:
    """Send one hostile packet and take what answers it."""
    rsp.send_raw(wire.data)
    if wire.kind == "bad-checksum":
        ack = rsp.read_ack()
        assert ack == b"-", f"a bad checksum was acked: {wire.data[:200]!r}"
        tally.naks += 1
        return None
    payload = wire.payload
    if wire.kind == "truncated":
        # The packet cut short is abandoned at the next '$', or eats its first bytes (then '-'
        # and the resend, as gdb does).
        payload = RESYNC.encode()
        rsp.send_raw(frame(payload))
        for _ in range(3):
            if rsp.read_ack() == b"+":
                break
            tally.resent += 1
            rsp.send_raw(frame(payload))
        else:
            raise AssertionError(f"after {wire.data[:200]!r}, {RESYNC} NAKed three times")
    else:
        ack = rsp.read_ack()
        assert ack == b"+", f"a good packet NAKed: {wire.data[:200]!r}"
    reply = reply_to(rsp, payload)
    if wire.kind == "overlong":
        assert reply == "E05", f"a packet longer than PacketSize answered {reply[:100]!r}"
        tally.overlong += 1
    tally.count(reply)
    return reply


def hostile_session(rsp: RspClient, target: Target, seed: int, count: int) -> Tally:
    """COUNT hostile packets, each answered within EXCHANGE_LIMIT seconds."""
    tally = Tally()
    generator = Generator(seed, target)
    started = time.monotonic()
    for wire in generator:
        if tally.sent == count:
            break
        begin = time.monotonic()
        try:
            reply = exchange(rsp, wire, tally)
        except AssertionError as error:
            raise AssertionError(f"seed {seed}, packet {tally.sent}: {wire.data[:300]!r}: {error}") from None
        took = time.monotonic() - begin
        if took > tally.slowest:
            tally.slowest, tally.slowest_packet = took, wire.data[:100]
        tally.sent += 1
        opened = re.fullmatch(r"F([0-9a-f]+)", reply or "")
        if opened and b"vFile:open" in unescaped(wire.payload):
            target.fds.append(int(opened.group(1), 16))
    seconds = time.monotonic() - started
    print(
        f"hostile packets: seed {seed}: {tally.sent} sent in {seconds:.1f} s: {tally.errors} answered with E, "
        f"{tally.empty} empty, {tally.answers} real answers, {tally.naks} bad-checksum naks; "
        f"{tally.overlong} longer than PacketSize, {tally.resent} resent after a cut packet; "
        f"slowest {tally.slowest * 1000:.0f} ms ({tally.slowest_packet!r}); excluded {dict(generator.excluded)}"
    )
    assert tally.slowest < EXCHANGE_LIMIT, tally
    return tally


# --------------------------------------------------------------------------- the state


def traceframe_blocks(info: str) -> list[tuple[int, int]]:
    """(address, length) of each memory block a traceframe-info lists."""
    blocks = re.findall(r'<memory start="0x([0-9a-f]+)" length="0x([0-9a-f]+)"', info)
    return [(int(address, 16), int(length, 16)) for address, length in blocks]


def xfer(rsp: RspClient, annex: str) -> str:
    """A whole qXfer object."""
    out, offset = "", 0
    while True:
        reply = rsp.request(f"{annex}:{offset:x},fff")
        assert reply[:1] in ("m", "l"), (annex, reply)
        out += reply[1:]
        offset += len(reply) - 1
        if reply[0] == "l":
            return out


def frame_contents(rsp: RspClient, number: int) -> tuple:
    """Trace frame NUMBER as gdb reads it: which it is, its registers, its blocks' bytes, its
    variables."""
    found = rsp.request(f"QTFrame:{number:x}")
    assert re.fullmatch(r"F[0-9a-f]+T[0-9a-f]+", found), found
    info = xfer(rsp, "qXfer:traceframe-info:read:")
    memory = []
    for address, length in traceframe_blocks(info):
        for at in range(address, address + length, 0x800):
            memory.append(decode_rle(rsp.request(f"m{at:x},{min(0x800, address + length - at):x}")))
    variables = [rsp.request(f"qTV:{v}") for v in re.findall(r'<tvar id="0x([0-9a-f]+)"', info)]
    return found, decode_rle(rsp.request("g")), info, memory, variables


def trace_buffer(rsp: RspClient) -> bytes:
    """Every byte qTBuffer gives."""
    out = b""
    while True:
        reply = decode_rle(rsp.request(f"qTBuffer:{len(out):x},800"))
        if reply == "l":
            return out
        assert re.fullmatch(r"(?:[0-9a-f]{2})+", reply), reply[:100]
        out += bytes.fromhex(reply)


def program_memory(pid: int) -> dict[str, bytes]:
    """Every readable mapping of process PID (its /proc/PID/maps line), straight from
    /proc/PID/mem; the kernel's [vvar] and [vsyscall] pages aside (they change, or cannot be
    read), and the stack named by its end only (see assert_same)."""
    out = {}
    with open(f"/proc/{pid}/mem", "rb") as mem:
        for line in open(f"/proc/{pid}/maps").read().splitlines():
            fields = line.split()
            if fields[1][0] != "r" or (len(fields) > 5 and fields[5].startswith("[v")):
                continue
            start, end = (int(x, 16) for x in fields[0].split("-"))
            mem.seek(start)
            out[f"[stack] up to {end:x}" if line.endswith("[stack]") else line] = mem.read(end - start)
    return out


@dataclass(frozen=True)
class State:
    status: str
    stop: str
    registers: str
    buffer: bytes
    frames: list
    memory: dict[str, bytes]


def state(rsp: RspClient, pid: int) -> State:
    """What no packet may change: the trace, frame by frame and byte by byte, the registers and
    the stop reply (no trace frame selected), the program's memory."""
    frames = [frame_contents(rsp, n) for n in range(FRAMES)]
    assert rsp.request(f"QTFrame:{FRAMES:x}") == "F-1"  # no more
    assert rsp.request("QTFrame:ffffffff") == "OK"
    return State(rsp.request("qTStatus"), rsp.request("?"), decode_rle(rsp.request("g")), trace_buffer(rsp), frames,
                 program_memory(pid))


def set_back(rsp: RspClient, status: str, supported: str) -> None:
    """The settings a hostile packet may change, as they were (STATUS: qTStatus then), as gdb
    sets them when it connects."""
    fields = dict(item.split(":", 1) for item in status.split(";")[1:] if ":" in item)
    stop_note = fields["tstop"].split(":")[0] if "tstop" in fields else ""
    for packet in (
        f"QTNotes:user:{fields['username']};notes:{fields['notes']};tstop:{stop_note}",
        f"QTDisconnected:{fields['disconn']}",
        f"QTBuffer:circular:{fields['circular']}",
        "QTFrame:ffffffff",
        "Hg0",
        "Hc0",
    ):
        assert rsp.request(packet) == "OK", packet
    rsp.handshake(supported)


def assert_same(before: State, after: State) -> None:
    assert after.status == before.status
    assert after.stop == before.stop
    assert after.registers == before.registers
    assert len(after.buffer) == len(before.buffer) and after.buffer == before.buffer
    for n, (b, a) in enumerate(zip(before.frames, after.frames)):
        assert a == b, f"trace frame {n}"
    assert list(after.memory) == list(before.memory), "the program's mappings"
    for mapping, content in before.memory.items():
        now = after.memory[mapping]
        if mapping.startswith("[stack]"):
            # A read below the stack makes the kernel extend it (__access_remote_vm, for
            # gdbserver's reads too): new pages of zeros below, the stack the same.
            grown = len(now) - len(content)
            assert grown >= 0 and now[grown:] == content and not any(now[:grown]), mapping
        else:
            assert now == content, mapping


def definitions(rsp: RspClient) -> tuple[list[str], list[str]]:
    """The tracepoints' definitions (their T, A and Z pieces: not the V ones, hit counts) and the
    trace state variables, as gdb uploads them."""
    variables = [rsp.request("qTfV")]
    while variables[-1] != "l":
        assert len(variables) < 100, variables
        variables.append(rsp.request("qTsV"))
    return [p for p in tracepoint_table(rsp) if p[0] in "TAZ"], variables[:-1]


def define_again(rsp: RspClient, tracepoints: list[str], variables: list[str]) -> None:
    """QTinit, then these definitions, as gdb sends them (a '-' where actions follow)."""
    assert rsp.request("QTinit") == "OK"
    for n, piece in enumerate(tracepoints):
        more = "-" if n + 1 < len(tracepoints) and tracepoints[n + 1][0] == "A" else ""
        if piece[0] == "Z":
            packet = "QTDPsrc:" + piece[1:]
        else:
            packet = ("QTDP:" if piece[0] == "T" else "QTDP:-") + piece[1:] + more
        assert rsp.request(packet) == "OK", packet
    for variable in variables:
        assert rsp.request("QTDV:" + variable) == "OK", variable


# --------------------------------------------------------------------------- the test

SUPPORTED = "multiprocess+;swbreak+;hwbreak+;vContSupported+"


def seed() -> int:
    chosen = os.environ.get("TPAGENT_FAULTS_SEED")
    return int(chosen) if chosen else random.SystemRandom().randrange(2**32)


@pytest.mark.timeout(1800 if FULL else 120)
def test_hostile_packets_change_nothing(e2e):
    s = Scenario(e2e, PROGRAM, str(ITERATIONS))
    define = s.define(
        "tvariable $hits = 0",
        trace("record_hit", "collect $regs", "collect iteration, scale, counter, table, current, *greeting@12",
              "teval $hits = $hits + 1", "collect $hits"),
        trace("other_hit", "collect $regs, iteration, $hits"),
    )
    walk = s.walk("iteration")
    r = s.gdb(*TO_MAIN, define, "break finished", "tstart", "continue", "tstop", "tstatus", walk, "tfind none",
              "delete", "disconnect")
    r.trace_stopped("by a tstop command", FRAMES)
    expected = [row for k in range(ITERATIONS) for row in ((2 * k, 2, k), (2 * k + 1, 3, k))]
    assert r.frames(walk) == expected
    r.stopped_at(1, r"^Breakpoint \d+, finished \(result=")

    chosen = seed()
    print(f"hostile packets: seed {chosen} (TPAGENT_FAULTS_SEED={chosen} repeats this run)")
    with s.raw(SUPPORTED) as rsp:
        # As gdb does: else our '+' and the next packet wait for the server's delayed ACK.
        rsp.sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        before, gdb_definitions = state(rsp, s.pid), definitions(rsp)
        regs = bytes.fromhex(before.registers[: 17 * 16])
        target = Target(
            pid=s.pid,
            pc=int.from_bytes(regs[16 * 8 : 17 * 8], "little"),
            sp=int.from_bytes(regs[7 * 8 : 8 * 8], "little"),
            symbols=symbol_addresses(s.program, s.pid),
            tracepoints=[(n, a) for n, a, _ in tracepoint_rows(rsp)],
            raw_size=len(before.buffer),
            program=str(s.program),
            packet_size=int(rsp.features["PacketSize"], 16),
        )
        assert len(target.tracepoints) == 2 and len(before.buffer) > 0, (target, before.status)
        hostile_session(rsp, target, chosen, PACKETS)
        set_back(rsp, before.status, SUPPORTED)
        assert_same(before, state(rsp, s.pid))
        # What the packets defined could make gdb's upload fail and gdb drop the connection (a
        # fast tracepoint at an unreadable address, a condition that does not parse), with any
        # server: gdb's definitions again (QTinit keeps the frames until the next QTStart).
        define_again(rsp, *gdb_definitions)
        assert definitions(rsp) == gdb_definitions
        assert_same(before, state(rsp, s.pid))
    assert s.server.running()

    # gdb takes the session over: the trace is there, and the program ends as it does alone.
    r = s.gdb("tstatus", walk, "tfind none", "delete", "continue")
    uploaded = dict(
        (int(target_number), int(number))
        for number, target_number in re.findall(r"^Created tracepoint (\d+) for target's tracepoint (\d+) ",
                                                r.of(s.connect), re.M)
    )
    assert uploaded.keys() == {2, 3}, r.of(s.connect)
    r.trace_stopped("by a tstop command", FRAMES)
    assert r.frames(walk) == [(f, uploaded[tp], k) for f, tp, k in expected], r.of(s.connect)
    s.ends_as_natively(r.of("continue"))
    record_reliability("Random and mutated packets on a live session (raw socket)", PACKETS, FRAMES)
