"""Fast tracepoints in a Go program (programs/ftrace_goroutines.go, built static without cgo
by Debian's golang-go; skipped without it): goroutines on several threads hit a jump whose pad
runs on an agent stack, never on the goroutine's own small stack, with the agent's image
placed in the program (no C library there).
"""

import os
import re
import shutil
import subprocess
from pathlib import Path

import pytest

from scenario import Scenario, ftrace, parse_frames

pytestmark = pytest.mark.tpagent_only("gdbserver traces fast only with libinproctrace.so preloaded")

NAME = "ftrace_goroutines"
ROUNDS = 40
GOROUTINES = 4


def build(e2e, cgo: bool = False, name: str = NAME) -> Path:
    go = shutil.which("go")
    if go is None:
        pytest.skip("go is missing (Debian's golang-go)")
    programs = Path(__file__).parent / "programs"
    sources = [programs / f"{name}.go"] + ([programs / f"{name}_cgo.go"] if cgo else [])
    output = e2e.tmp / (name + ("_cgo" if cgo else ""))
    # One build cache for every test of the run: the first build compiles Go's runtime.
    cache = Path(os.environ.get("TPAGENT_E2E_SCRATCH", e2e.tmp)) / "go-cache"
    env = dict(os.environ, CGO_ENABLED="1" if cgo else "0", GOCACHE=str(cache),
               GOPATH=str(cache / "path"), GO111MODULE="off", GOFLAGS="")
    r = subprocess.run([go, "build", "-o", str(output), *map(str, sources)],
                       capture_output=True, text=True, timeout=600, env=env)
    assert r.returncode == 0, r.stdout + r.stderr
    return output


# A gdb command printing "long instruction at 0xADDR": the first instruction of main.work
# that is 5 bytes or longer (the Go program's displacement is refused: a jump needs room).
LONG_INSTRUCTION = "\n".join([
    "python",
    "work = gdb.lookup_global_symbol('main.work')",
    "arch = gdb.selected_inferior().architecture()",
    "start = int(work.value().address)",
    "for insn in arch.disassemble(start, start + 32):",
    "    if insn['length'] >= 5:",
    "        print('long instruction at 0x%x' % insn['addr'])",
    "        break",
    "end",
])


def test_goroutines_hit_pads_on_agent_stacks(e2e):
    """Every call of work() is a frame: the registers (rax = rcx + rbx: s = 3n + k, at the
    instruction after the two leas) and main.total; ROUNDS calls for each goroutine id
    (rbx); several threads (fs_base, each Go thread's own) collected; the stack pointer in
    the frames is the goroutine's, and the stacks the pads ran on were taken by at least as
    many threads, counted by `monitor tracepoints`. Then the same frames from a `tsave -r`
    file, and the program's output and exit as natively."""
    program = build(e2e)
    s = Scenario(e2e, NAME, str(ROUNDS), program=program)
    finder = s.file(*LONG_INSTRUCTION.splitlines())
    trace_file = e2e.tmp / "go.tf"
    r0 = s.gdb(finder, connect=False)  # (a static program: its addresses are the file's)
    addr = int(re.search(r"long instruction at 0x([0-9a-f]+)", r0.of(finder)).group(1), 16)

    define = s.define(ftrace(f"*0x{addr:x}", "collect $regs, main.total"))
    walk = s.walk("$rax", "$rbx", "$rcx", "$rsp", "$fs_base", "$pc")
    # (Go's syntax for the global, C's for the walk's printf of registers.)
    r = s.gdb("break main.main", "continue", "delete", define, "tstart",
              "monitor tracepoints", "break main.finished", "continue", "tstop", "tstatus",
              "monitor tracepoints", "set language c", walk, f"tsave -r {trace_file}", "tfind none", "delete",
              "continue")
    assert r.of("tstart").strip() == "", r.of("tstart")
    assert "jumps to its pad" in r.of("monitor tracepoints"), r.of("monitor tracepoints")
    r.trace_stopped("by a tstop command", GOROUTINES * ROUNDS)
    rows = [row[2:] for row in parse_frames(r.of(walk))]
    assert len(rows) == GOROUTINES * ROUNDS, r.of(walk)
    for rax, rbx, rcx, rsp, fs_base, pc in rows:
        assert pc == addr and rax == rcx + rbx and rcx % 3 == 0, (rax, rbx, rcx, pc)
    calls = sorted((rbx, rcx // 3) for _, rbx, rcx, *_ in rows)
    assert calls == [(k, n) for k in range(GOROUTINES) for n in range(ROUNDS)]
    threads = {row[4] for row in rows}
    assert len(threads) >= 2, f"all the hits on one thread: {threads}"
    # The goroutines' stacks are Go heap memory; the pads' stacks are tpagent's pool.
    used = re.search(r"agent stacks \(a Go program\): (\d+) of (\d+) taken",
                     r.of("monitor tracepoints", 1))
    assert used and int(used.group(1)) >= len(threads), r.of("monitor tracepoints", 1)
    assert "not collected" not in r.of("monitor tracepoints", 1)
    s.ends_as_natively(r.of("continue", 2))

    saved = s.gdb("set language c", f"target tfile {trace_file}", walk, connect=False)
    assert [row[2:] for row in parse_frames(saved.of(walk))] == rows, saved.of(walk)


def test_a_cgo_program_is_traced_through_traps_with_the_reason(e2e):
    """A Go program linked with cgo: fs is the C library's and no word there is free for the
    pad's agent stack, and the goroutine's stack cannot take the pad: the fast tracepoint is
    collected by a trap, tstart says why, and every call is still a frame."""
    program = build(e2e, cgo=True)
    s = Scenario(e2e, NAME, str(ROUNDS), program=program)
    define = s.define(ftrace("main.work", "collect $regs"))
    walk = s.walk("$rbx")
    r = s.gdb("break main.main", "continue", "delete", define, "tstart", "break main.finished",
              "continue", "tstop", "tstatus", "monitor tracepoints", "set language c", walk,
              "tfind none", "delete", "continue")
    assert re.search(r"collected through a trap \(trap speed\): a Go program linked with cgo",
                     r.of("tstart")), r.of("tstart")
    r.trace_stopped("by a tstop command", GOROUTINES * ROUNDS)
    assert sorted(row[2] for row in parse_frames(r.of(walk))) == sorted(
        k for k in range(GOROUTINES) for _ in range(ROUNDS))
    s.ends_as_natively(r.of("continue", 2))


# A gdb command printing "instruction at 0xADDR" for each instruction of main.spin up to its
# return.
SPIN_INSTRUCTIONS = "\n".join([
    "python",
    "spin = gdb.lookup_global_symbol('main.spin')",
    "arch = gdb.selected_inferior().architecture()",
    "start = int(spin.value().address)",
    "for insn in arch.disassemble(start, start + 256):",
    "    print('instruction at 0x%x' % insn['addr'])",
    "    if insn['asm'].startswith('ret'):",
    "        break",
    "end",
])


@pytest.mark.parametrize("first", [0, 1])
def test_goroutines_preempted_anywhere_never_resume_inside_a_jump(e2e, first):
    """16 goroutines spin on one thread (programs/ftrace_go_spin.go), the runtime preempting
    them by signal at any instruction of the loop: a fast tracepoint at every other
    instruction of main.spin (from the FIRST), installed while 15 of them are parked
    mid-loop, so jumps displace the instructions between. A window holding a parked
    goroutine's resume address (on its stack) is not displaced: a short jump to padding
    nearby, or a trap, goes there instead, and the program runs on and ends as natively."""
    program = build(e2e, name="ftrace_go_spin")
    s = Scenario(e2e, "ftrace_go_spin", program=program, options=("--debug",))
    finder = s.file(*SPIN_INSTRUCTIONS.splitlines())
    listed = s.gdb(finder, connect=False)
    addresses = [int(a, 16) for a in re.findall(r"instruction at 0x([0-9a-f]+)", listed.of(finder))]
    assert len(addresses) > 10, listed.of(finder)
    # (A condition never true: no frame fills the buffer, whose end would stop the trace and
    # take the jumps out before the parked goroutines run again.)
    define = s.define(*[ftrace(f"*0x{a:x} if $rsp == 0", "collect $rcx")
                        for a in addresses[first::2]])
    # The ones collected through traps are disabled at once: a trap at each turn of the loop
    # would slow it down past the test's time.
    disable_traps = s.file(
        "python",
        "import re",
        "listing = gdb.execute('monitor tracepoints', to_string=True)",
        "print(listing)",
        "for n in re.findall(r'^Fast tracepoint (\\d+) at \\S+ is collected through a trap',",
        "                    listing, re.M):",
        "    gdb.execute('disable ' + n)",
        "end",
    )
    # (Most of the loop's time goes to pads now, where the runtime cannot preempt a goroutine:
    # handing the one P round takes many of its 10 ms tries, longer on a loaded machine.)
    r = s.gdb("break main.checkpoint", "continue", "delete", define, "tstart", disable_traps,
              "info tracepoints", "continue", timeout=240)
    listing = r.of(disable_traps)
    assert "jumps to its pad" in listing, listing
    # The goroutines' stacks were searched, and held addresses in the code: where one is
    # inside a window, a trap or a short jump (whose window is one instruction) goes there.
    s.server.wait_for(r"goroutines: \d+ stacks, [1-9]\d* words into the code")
    assert re.search(r"a goroutine will resume at|through a short jump", listing), listing
    s.ends_as_natively(r.of("continue", 1))
