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
import subprocess
from pathlib import Path

import pytest

from harness import assert_in_order, hex_value
from rsp import RspClient, decode_rle
from test_ftrace import FtracePrograms, exited_with, frames_of, native_run, walk_frames

pytestmark = pytest.mark.tpagent_only("--relocate-with-gdb is tpagent's option")

PROGRAM = "ftrace_reloc"
OPTIONS = ("--relocate-with-gdb", "--inproc")
TO_MAIN = ("break main", "continue", "delete")
ITERATIONS = 5


@pytest.fixture(scope="module")
def builds(tmp_path_factory):
    return FtracePrograms(tmp_path_factory.mktemp("ftrace-reloc-programs"))


def program_and_reference(builds):
    program = builds.path(PROGRAM, pie=True)
    return program, native_run(program, str(ITERATIONS))


def site_address(text: str, number: int) -> int:
    return hex_value(text, rf"Fast tracepoint {number} at 0x([0-9a-f]+)")


def helper_total(n: int) -> int:
    """total after n calls of helper(): 7j+1 summed over j < n."""
    return sum(7 * j + 1 for j in range(n))


def program_bytes(pid: int, address: int, count: int) -> bytes:
    """The bytes at address straight from /proc/PID/mem: what the program runs, whatever
    the server shows gdb (it hides its jumps)."""
    with open(f"/proc/{pid}/mem", "rb") as mem:
        mem.seek(address)
        return mem.read(count)


def direct_read(pid: int, symbol: str) -> str:
    """A gdb command printing the 8 bytes at symbol from /proc/PID/mem, as od does."""
    return f'eval "shell dd if=/proc/{pid}/mem bs=1 skip=%lu count=8 status=none | od -An -tx1", (long){symbol}'


# --------------------------------------------------------------------------- through gdb


def test_gdb_relocates_call_rip_relative_and_branch(e2e, builds):
    """Three fast tracepoints, on a call, a rip-relative add and a jne rel32: gdb gets one
    qRelocInsn request for each during tstart and answers with its relocation's length;
    every hit records the registers and the globals; after tstop the program finishes with
    the checksum of a run without a debugger."""
    program, reference = program_and_reference(builds)
    server = e2e.serve(program, str(ITERATIONS), options=OPTIONS)
    define = e2e.command_file(
        "ftrace *site_call",
        "actions",
        "collect $regs",
        "collect calls, total",
        "end",
        "ftrace *site_riprel",
        "actions",
        "collect $regs, calls, total",
        "end",
        "ftrace *site_branch",
        "actions",
        "collect $regs, calls, total",
        "end",
    )
    walk = walk_frames(e2e, "$rbx", "$rip", "$rax", "calls", "total")
    r = e2e.gdb(
        server.remote,
        *TO_MAIN,
        define,
        "break finished",
        "set debug remote 1",
        "tstart",
        "set debug remote 0",
        "continue",
        "tstop",
        "tstatus",
        walk,
        "tfind none",
        "delete",
        "continue",
        program=program,
    )
    call, riprel, branch = (site_address(r.of(define), n) for n in (2, 3, 4))
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

    assert_in_order(r.of("continue", 1), r"Breakpoint 5, finished \(\)")
    assert_in_order(r.of("tstatus"), r"^Trace stopped by a tstop command", rf"^Collected {3 * ITERATIONS} trace frames\.$")
    rows = frames_of(r.of(walk))
    assert [row[:2] for row in rows] == [(3 * n + k, 2 + k) for n in range(ITERATIONS) for k in range(3)], r.of(walk)
    for frame, tp, rbx, rip, rax, calls, total in rows:
        n = frame // 3  # rbx holds probe()'s argument throughout
        if tp == 2:  # before the call
            assert (rbx, rip, calls, total) == (n, call, n, helper_total(n)), (frame, rows)
        elif tp == 3:  # the call returned 7n+1, about to be added to total
            assert (rbx, rip, rax, calls, total) == (n, riprel, 7 * n + 1, n + 1, helper_total(n)), (frame, rows)
        else:  # added
            assert (rbx, rip, rax, calls, total) == (n, branch, 7 * n + 1, n + 1, helper_total(n + 1)), (frame, rows)
    exited_with(r.of("continue", 2), server.inferior_pid, reference.returncode)
    server.wait_for(rf"^{re.escape(reference.stdout.strip())}$")


def test_gdb_error_answer(e2e, builds):
    """gdb answers E01 when it cannot read the instruction: here a write-only memory region
    (a gdb setting) over the bytes after it, which gdb reads with it. tstart fails naming
    the instruction, nothing stays in the program, and a second tstart, without the region,
    works."""
    program, reference = program_and_reference(builds)
    server = e2e.serve(program, str(ITERATIONS), options=OPTIONS)
    define = e2e.command_file("ftrace *site_riprel", "actions", "collect total", "end")
    region = 'eval "mem 0x%lx 0x%lx wo", (long)site_riprel + 7, (long)site_riprel + 16'
    r = e2e.gdb(
        server.remote,
        *TO_MAIN,
        define,
        "set mem inaccessible-by-default off",
        region,
        "set debug remote 1",
        "tstart",
        "set debug remote 0",
        "tstatus",
        direct_read(server.inferior_pid, "site_riprel"),
        "delete mem",
        "tstart",
        "tstatus",
        "break finished",
        "continue",
        "tstop",
        "tstatus",
        "delete",
        "continue",
        program=program,
    )
    riprel = site_address(r.of(define), 2)
    failed = r.of("tstart")
    assert re.search(r"Sending packet: \$E01#", failed), failed
    assert_in_order(
        failed,
        rf"^Target returns error code .*fast tracepoint at 0x{riprel:x}: gdb could not relocate the "
        rf"instruction at 0x{riprel:x}",
    )
    assert not re.search(r"^Trace is running", r.of("tstatus"), re.M), r.of("tstatus")
    assert r.of(direct_read(server.inferior_pid, "site_riprel")).split()[:3] == ["48", "01", "05"]  # add, not jmp
    assert r.of("tstart", 1).strip() == "", r.of("tstart", 1)
    assert_in_order(r.of("tstatus", 1), r"^Trace is running on the target\.$")
    assert_in_order(r.of("tstatus", 2), rf"^Collected {ITERATIONS} trace frames\.$")
    exited_with(r.of("continue", 2), server.inferior_pid, reference.returncode)


def test_relocation_that_goes_astray_is_refused(e2e, builds):
    """site_short is a jne rel8 behind three prefixes (5 bytes, so gdb accepts the ftrace);
    gdb copies it unchanged, so from the pad it would branch into the pad rather than into
    probe(). tpagent checks gdb's code with its own decoder and refuses it: tstart fails naming
    the instruction and both addresses, and the site already installed (site_riprel, the
    lower number) is taken out again."""
    program, reference = program_and_reference(builds)
    server = e2e.serve(program, str(ITERATIONS), options=OPTIONS)
    define = e2e.command_file(
        "ftrace *site_riprel", "actions", "collect total", "end", "ftrace *site_short", "actions", "collect total", "end"
    )
    r = e2e.gdb(
        server.remote,
        *TO_MAIN,
        define,
        "set debug remote 1",
        "tstart",
        "set debug remote 0",
        "tstatus",
        direct_read(server.inferior_pid, "site_riprel"),
        "continue",
        program=program,
    )
    riprel, short = site_address(r.of(define), 2), site_address(r.of(define), 3)
    failed = r.of("tstart")
    requests = [int(f, 16) for f in re.findall(r"Packet received: qRelocInsn:([0-9a-f]+);", failed)]
    assert requests == [riprel, short], failed
    # jne rel8 at site_short + 3 goes to site_short + 11 (see the program).
    assert_in_order(
        failed,
        rf"^Target returns error code .*fast tracepoint at 0x{short:x}: gdb's relocation of the "
        rf"instruction at 0x{short:x} \(to 0x[0-9a-f]+\) reaches \[0x[0-9a-f]+\] where the "
        rf"original reaches \[0x{short + 11:x}\]",
    )
    assert not re.search(r"^Trace is running", r.of("tstatus"), re.M), r.of("tstatus")
    assert r.of(direct_read(server.inferior_pid, "site_riprel")).split()[:3] == ["48", "01", "05"]
    exited_with(r.of("continue", 1), server.inferior_pid, reference.returncode)


# --------------------------------------------------------------------------- playing gdb


def symbols(program: Path) -> dict[str, int]:
    out = subprocess.run(["nm", str(program)], capture_output=True, text=True, check=True).stdout
    return {name: int(value, 16) for value, _, name in (line.split() for line in out.splitlines() if len(line.split()) == 3)}


def load_base(pid: int, program: Path) -> int:
    for line in Path(f"/proc/{pid}/maps").read_text().splitlines():
        fields = line.split()
        if len(fields) >= 6 and fields[5] == str(program) and int(fields[2], 16) == 0:
            return int(fields[0].split("-")[0], 16)
    raise AssertionError(f"{program} not mapped in {pid}")


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

    def __init__(self, e2e, builds) -> None:
        self.program, self.reference = program_and_reference(builds)
        self.server = e2e.serve(self.program, str(ITERATIONS), options=OPTIONS)
        self.rsp = RspClient(self.server.port)
        self.rsp.request("qSupported:swbreak+;qRelocInsn+")
        base = load_base(self.server.inferior_pid, self.program)
        self.sym = {name: base + value for name, value in symbols(self.program).items()}
        self.run_to("main")
        self.pair = self.sym["site_pair"]
        self.original = program_bytes(self.server.inferior_pid, self.pair, 8)
        assert self.original[:4] == bytes([0x48, 0x89, 0xDF, 0xE8])  # mov %rbx,%rdi; call helper
        assert self.rsp.request("QTinit") == "OK"
        # Fast (F3: gdb's length of the first instruction), collecting `total`.
        assert self.rsp.request(f"QTDP:1:{self.pair:016x}:E:0:0:F3-") == "OK"
        assert self.rsp.request(f"QTDP:-1:{self.pair:016x}:M-1,{self.sym['total']:x},8") == "OK"

    def run_to(self, name: str) -> None:
        address = self.sym[name]
        assert self.rsp.request(f"Z0,{address:x},1") == "OK"
        stop = self.rsp.request("c")
        assert stop.startswith("T05"), stop
        assert self.rsp.request(f"z0,{address:x},1") == "OK"

    def relocation_request(self, reply: str) -> tuple[int, int]:
        match = re.fullmatch(r"qRelocInsn:([0-9a-f]+);([0-9a-f]+)", reply)
        assert match, reply
        return int(match.group(1), 16), int(match.group(2), 16)

    def finish(self) -> None:
        """The program runs to its end with the checksum of a run without a debugger."""
        assert self.rsp.request("c") == f"W{self.reference.returncode:02x}"
        self.server.wait_for(rf"^{re.escape(self.reference.stdout.strip())}$")
        self.rsp.close()


def test_two_instructions_relocated_one_by_one(e2e, builds):
    """site_pair's jump displaces mov (3 bytes) and the call: two requests, the second FROM
    the call and TO just after the 3 bytes written for the first. Packets in between (a
    memory read, the writes) are answered as usual; after the last answer QTStart's reply is
    OK, the program has the jump, and each of the 5 hits makes a frame."""
    gdb = PlayingGdb(e2e, builds)
    rsp, pid = gdb.rsp, gdb.server.inferior_pid
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

    gdb.run_to("finished")
    status = rsp.request("qTStatus")
    assert re.search(rf";tframes:{ITERATIONS:x};", status), status
    assert rsp.request("QTStop") == "OK"
    assert program_bytes(pid, gdb.pair, 8) == gdb.original
    gdb.finish()


def test_error_answer_on_the_second_instruction(e2e, builds):
    """gdb answers E01 for the call after relocating the mov: QTStart's reply is an error
    naming the call, nothing is installed, the trace does not run, and the session goes on:
    QTStart again, answered in full, starts it."""
    gdb = PlayingGdb(e2e, builds)
    rsp, pid = gdb.rsp, gdb.server.inferior_pid
    first, to = gdb.relocation_request(rsp.request("QTStart"))
    assert rsp.request(f"M{to:x},3:{gdb.original[:3].hex()}") == "OK"
    second, _ = gdb.relocation_request(rsp.request("qRelocInsn:3"))
    reply = rsp.request("E01")
    assert reply.startswith("E.") and f"gdb could not relocate the instruction at 0x{second:x}" in reply, reply
    assert rsp.request("qTStatus").startswith("T0;")
    assert program_bytes(pid, gdb.pair, 8) == gdb.original
    # An answer with nothing pending is an ordinary (unknown) packet now.
    assert rsp.request("qRelocInsn:5") == ""

    first, to = gdb.relocation_request(rsp.request("QTStart"))
    code = gdb.original
    assert rsp.request(f"M{to:x},3:{code[:3].hex()}") == "OK"
    second, to2 = gdb.relocation_request(rsp.request("qRelocInsn:3"))
    call = gdb_call_relocation(code[3:8], second, to2)
    assert rsp.request(f"M{to2:x},{len(call):x}:{call.hex()}") == "OK"
    assert rsp.request(f"qRelocInsn:{len(call):x}") == "OK"
    gdb.run_to("finished")
    assert re.search(rf";tframes:{ITERATIONS:x};", rsp.request("qTStatus"))
    assert rsp.request("QTStop") == "OK"
    gdb.finish()
