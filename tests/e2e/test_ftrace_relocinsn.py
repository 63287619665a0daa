"""Fast tracepoints with tpagent --relocate-with-gdb: at QTStart tpagent asks gdb to relocate
each displaced instruction into the jump pad ("qRelocInsn:FROM;TO"); gdb writes it there
with ordinary memory writes and answers "qRelocInsn:LEN", or "E01" when it cannot, while it
keeps waiting for QTStart's own reply.

programs/ftrace_reloc.c: probe(n) is assembly, its sites are global labels (see the file);
main calls probe(0..N-1) and exits with a checksum of the results. The programs are PIE (the
pads are near the code, 0x5555... here): gdb relocates the call with a return address above
2 GiB in its long form (sub/movl/movl/jmp, 0x18 bytes).

gdb refuses to put a fast tracepoint on an instruction shorter than the jump, so through gdb
every site displaces one instruction; the raw-protocol tests play gdb's part themselves to
have a site whose jump displaces two (site_pair: a mov, then the call).
"""

import re

import pytest

from harness import assert_in_order
from rsp import decode_rle
from scenario import (
    TO_MAIN,
    TO_THE_END,
    Scenario,
    dumped_bytes,
    ftrace,
    program_bytes,
    run_to,
    symbol_addresses,
    tracepoint_address,
)

pytestmark = pytest.mark.tpagent_only("--relocate-with-gdb is tpagent's option")

PROGRAM = "ftrace_reloc"
OPTIONS = ("--relocate-with-gdb", "--inproc")
ITERATIONS = 5
# gdb's remote protocol log around tstart: the relocation requests and answers.
TSTART_LOGGED = ("set debug remote 1", "tstart", "set debug remote 0")


def relocating(e2e) -> Scenario:
    """ftrace_reloc (PIE) under tpagent --relocate-with-gdb --inproc."""
    return Scenario(e2e, PROGRAM, str(ITERATIONS), options=OPTIONS)


def helper_total(n: int) -> int:
    """total after n calls of helper(): 7j+1 summed over j < n."""
    return sum(7 * j + 1 for j in range(n))


def still_the_add(r, s: Scenario) -> None:
    """site_riprel holds the program's add, not a jump."""
    assert dumped_bytes(r.of(s.read_code("(long)site_riprel")))[:3] == [0x48, 0x01, 0x05]


# --------------------------------------------------------------------------- through gdb


def test_gdb_relocates_call_rip_relative_and_branch(e2e):
    """Three fast tracepoints, on a call, a rip-relative add and a jne rel32: gdb gets one
    qRelocInsn request for each during tstart and answers with its relocation's length;
    every hit records the registers and the globals; after tstop the program finishes with
    the checksum of a run without a debugger."""
    s = relocating(e2e)
    define = s.define(
        ftrace("*site_call", "collect $regs", "collect calls, total"),
        ftrace("*site_riprel", "collect $regs, calls, total"),
        ftrace("*site_branch", "collect $regs, calls, total"),
    )
    walk = s.walk("$rbx", "$rip", "$rax", "calls", "total")
    r = s.gdb(*TO_MAIN, define, "break finished", *TSTART_LOGGED, "continue", "tstop", "tstatus", walk, *TO_THE_END)
    call, riprel, branch = (tracepoint_address(r.of(define), n, fast=True) for n in (2, 3, 4))
    started = r.of("tstart")
    assert not re.search(r"^(warning|Target returns)", started, re.M), started
    # One request per site, FROM the site; gdb's answers: the long push form of the call and
    # jmp (0x18 bytes), then the add and the jne at their own lengths.
    requests = re.findall(r"Packet received: qRelocInsn:([0-9a-f]+);([0-9a-f]+)", started)
    assert [int(f, 16) for f, _ in requests] == [call, riprel, branch], started
    answers = re.findall(r"Sending packet: \$qRelocInsn:([0-9a-f]+)#", started)
    assert answers == ["18", "7", "6"], started
    # gdb wrote each at its TO (binary X packets) before answering.
    for _, to in requests:
        assert re.search(rf"Sending packet: \$X{to},", started), (to, started)

    r.stopped_at(1, r"Breakpoint 5, finished \(\)")
    r.trace_stopped("by a tstop command", 3 * ITERATIONS)
    rows = r.frames(walk)
    assert [row[:2] for row in rows] == [(3 * n + k, 2 + k) for n in range(ITERATIONS) for k in range(3)], r.of(walk)
    for frame, tp, rbx, rip, rax, calls, total in rows:
        n = frame // 3  # rbx holds probe()'s argument throughout
        if tp == 2:  # before the call
            assert (rbx, rip, calls, total) == (n, call, n, helper_total(n)), (frame, rows)
        elif tp == 3:  # the call returned 7n+1, about to be added to total
            assert (rbx, rip, rax, calls, total) == (n, riprel, 7 * n + 1, n + 1, helper_total(n)), (frame, rows)
        else:  # added
            assert (rbx, rip, rax, calls, total) == (n, branch, 7 * n + 1, n + 1, helper_total(n + 1)), (frame, rows)
    s.ends_as_natively(r.of("continue", 2))


def test_gdb_error_answer(e2e):
    """gdb answers E01 when it cannot read the instruction: here a write-only memory region
    (a gdb setting) over the bytes after it, which gdb reads with it. tstart fails naming
    the instruction, nothing stays in the program, and a second tstart, without the region,
    works."""
    s = relocating(e2e)
    define = s.define(ftrace("*site_riprel", "collect total"))
    region = 'eval "mem 0x%lx 0x%lx wo", (long)site_riprel + 7, (long)site_riprel + 16'
    r = s.gdb(
        *TO_MAIN, define, "set mem inaccessible-by-default off", region,
        *TSTART_LOGGED, "tstatus", s.read_code("(long)site_riprel"),
        "delete mem", "tstart", "tstatus",
        "break finished", "continue", "tstop", "tstatus", "delete", "continue",
    )
    riprel = tracepoint_address(r.of(define), 2, fast=True)
    failed = r.of("tstart")
    assert re.search(r"Sending packet: \$E01#", failed), failed
    assert_in_order(
        failed,
        rf"^Target returns error code .*fast tracepoint \d+ at 0x{riprel:x}: gdb could not relocate the "
        rf"instruction at 0x{riprel:x}",
    )
    assert not r.status().running, r.status()
    still_the_add(r, s)
    assert r.of("tstart", 1).strip() == "", r.of("tstart", 1)
    assert r.status(1).running, r.status(1)
    assert r.status(2).collected == ITERATIONS, r.status(2)
    s.exits_as_natively(r.of("continue", 2))


def test_relocation_that_goes_astray_is_refused(e2e):
    """site_short is a jne rel8 behind three prefixes (5 bytes, so gdb accepts the ftrace);
    gdb copies it unchanged, so from the pad it would branch into the pad rather than into
    probe(). tpagent checks gdb's code with its own decoder and refuses it: tstart fails naming
    the instruction and both addresses, and the site already installed (site_riprel, the
    lower number) is taken out again."""
    s = relocating(e2e)
    define = s.define(ftrace("*site_riprel", "collect total"), ftrace("*site_short", "collect total"))
    r = s.gdb(*TO_MAIN, define, *TSTART_LOGGED, "tstatus", s.read_code("(long)site_riprel"), "continue")
    riprel, short = (tracepoint_address(r.of(define), n, fast=True) for n in (2, 3))
    failed = r.of("tstart")
    requests = [int(f, 16) for f in re.findall(r"Packet received: qRelocInsn:([0-9a-f]+);", failed)]
    assert requests == [riprel, short], failed
    # jne rel8 at site_short + 3 goes to site_short + 11 (see the program).
    assert_in_order(
        failed,
        rf"^Target returns error code .*fast tracepoint \d+ at 0x{short:x}: gdb's relocation of the "
        rf"instruction at 0x{short:x} \(to 0x[0-9a-f]+\) reaches \[0x[0-9a-f]+\] where the "
        rf"original reaches \[0x{short + 11:x}\]",
    )
    assert not r.status().running, r.status()
    still_the_add(r, s)
    s.exits_as_natively(r.of("continue", 1))


# --------------------------------------------------------------------------- playing gdb


def gdb_call_relocation(call: bytes, source: int, to: int) -> bytes:
    """What gdb's amd64_relocate_instruction writes at `to` for `call rel32` at `source`
    when the return address is above 2 GiB: sub rsp, 8; movl the return address into
    [rsp] and [rsp+4]; jmp rel32 to the callee."""
    assert call[0] == 0xE8
    target = source + 5 + int.from_bytes(call[1:5], "little", signed=True)
    ret = source + 5
    code = bytes([0x48, 0x83, 0xEC, 0x08, 0xC7, 0x04, 0x24]) + (ret & 0xFFFFFFFF).to_bytes(4, "little")
    code += bytes([0xC7, 0x44, 0x24, 0x04]) + (ret >> 32).to_bytes(4, "little")
    return code + b"\xe9" + (target - (to + len(code) + 5)).to_bytes(4, "little", signed=True)


class PlayingGdb:
    """tpagent started on the program, driven over a raw connection that announced qRelocInsn+,
    stopped at main with the in-process agent loaded, fast tracepoint 1 on site_pair."""

    def __init__(self, e2e) -> None:
        self.scenario = relocating(e2e)
        self.rsp = self.scenario.raw(supported="swbreak+;qRelocInsn+", ask_stop=False)
        self.pid = self.scenario.pid
        self.sym = symbol_addresses(self.scenario.program, self.pid)
        self.run_to("main")
        self.pair = self.sym["site_pair"]
        self.original = program_bytes(self.pid, self.pair, 8)
        assert self.original[:4] == bytes([0x48, 0x89, 0xDF, 0xE8])  # mov %rbx,%rdi; call helper
        assert self.rsp.request("QTinit") == "OK"
        # Fast (F3: gdb's length of the first instruction), collecting `total`.
        assert self.rsp.request(f"QTDP:1:{self.pair:016x}:E:0:0:F3-") == "OK"
        assert self.rsp.request(f"QTDP:-1:{self.pair:016x}:M-1,{self.sym['total']:x},8") == "OK"

    def run_to(self, name: str) -> None:
        run_to(self.rsp, self.sym[name])

    def relocation_request(self, reply: str) -> tuple[int, int]:
        match = re.fullmatch(r"qRelocInsn:([0-9a-f]+);([0-9a-f]+)", reply)
        assert match, reply
        return int(match.group(1), 16), int(match.group(2), 16)

    def answer_in_full(self) -> None:
        """QTStart, its two requests answered as gdb does: the mov copied as is, the call in
        its long form."""
        first, to = self.relocation_request(self.rsp.request("QTStart"))
        code = self.original
        assert self.rsp.request(f"M{to:x},3:{code[:3].hex()}") == "OK"
        second, to2 = self.relocation_request(self.rsp.request("qRelocInsn:3"))
        call = gdb_call_relocation(code[3:8], second, to2)
        assert self.rsp.request(f"M{to2:x},{len(call):x}:{call.hex()}") == "OK"
        assert self.rsp.request(f"qRelocInsn:{len(call):x}") == "OK"

    def run_the_trace(self) -> None:
        """To finished(): a frame for each iteration; then QTStop."""
        self.run_to("finished")
        status = self.rsp.request("qTStatus")
        assert re.search(rf";tframes:{ITERATIONS:x};", status), status
        assert self.rsp.request("QTStop") == "OK"

    def finish(self) -> None:
        """The program runs to its end with the checksum of a run without a debugger."""
        reference = self.scenario.reference
        assert self.rsp.request("c") == f"W{reference.returncode:02x}"
        self.scenario.server.wait_for(rf"^{re.escape(reference.stdout.strip())}$")
        self.rsp.close()


def test_two_instructions_relocated_one_by_one(e2e):
    """site_pair's jump displaces mov (3 bytes) and the call: two requests, the second FROM
    the call and TO just after the 3 bytes written for the first. Packets in between (a
    memory read, the writes) are answered as usual; after the last answer QTStart's reply is
    OK, the program has the jump, and each of the 5 hits makes a frame."""
    gdb = PlayingGdb(e2e)
    rsp, pid = gdb.rsp, gdb.pid
    first, to = gdb.relocation_request(rsp.request("QTStart"))
    assert first == gdb.pair
    code = bytes.fromhex(decode_rle(rsp.request(f"m{first:x},8")))  # the program's code, as gdb reads it
    assert code == gdb.original
    assert rsp.request(f"M{to:x},3:{code[:3].hex()}") == "OK"  # mov: copied as is
    second, to2 = gdb.relocation_request(rsp.request("qRelocInsn:3"))
    assert (second, to2) == (first + 3, to + 3)
    call = gdb_call_relocation(code[3:8], second, to2)
    assert rsp.request(f"M{to2:x},{len(call):x}:{call.hex()}") == "OK"
    assert rsp.request(f"qRelocInsn:{len(call):x}") == "OK"

    assert rsp.request("qTStatus").startswith("T1;")
    # The jump to the pad, whose own code comes before what gdb wrote; then the jump back
    # to just after the call.
    patch = program_bytes(pid, gdb.pair, 5)
    assert patch[0] == 0xE9
    assert gdb.pair + 5 + int.from_bytes(patch[1:], "little", signed=True) < to
    assert program_bytes(pid, to, 3 + len(call)) == code[:3] + call
    back = to + 3 + len(call)
    jump = program_bytes(pid, back, 5)
    assert jump[0] == 0xE9 and back + 5 + int.from_bytes(jump[1:], "little", signed=True) == gdb.pair + 8
    assert bytes.fromhex(decode_rle(rsp.request(f"m{gdb.pair:x},8"))) == gdb.original  # gdb sees the program's code

    gdb.run_the_trace()
    assert program_bytes(pid, gdb.pair, 8) == gdb.original
    gdb.finish()


def test_error_answer_on_the_second_instruction(e2e):
    """gdb answers E01 for the call after relocating the mov: QTStart's reply is an error
    naming the call, nothing is installed, the trace does not run, and the session goes on:
    QTStart again, answered in full, starts it."""
    gdb = PlayingGdb(e2e)
    rsp, pid = gdb.rsp, gdb.pid
    first, to = gdb.relocation_request(rsp.request("QTStart"))
    assert rsp.request(f"M{to:x},3:{gdb.original[:3].hex()}") == "OK"
    second, _ = gdb.relocation_request(rsp.request("qRelocInsn:3"))
    reply = rsp.request("E01")
    assert reply.startswith("E.") and f"gdb could not relocate the instruction at 0x{second:x}" in reply, reply
    assert rsp.request("qTStatus").startswith("T0;")
    assert program_bytes(pid, gdb.pair, 8) == gdb.original
    # An answer with nothing pending is an ordinary (unknown) packet now.
    assert rsp.request("qRelocInsn:5") == ""

    gdb.answer_in_full()
    gdb.run_the_trace()
    gdb.finish()
