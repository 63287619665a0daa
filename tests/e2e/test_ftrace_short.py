"""Fast tracepoints at x86-64 instructions shorter than the 5-byte jump: gdb accepts `ftrace`
anywhere (qTMinFTPILen is 1), and tpagent displaces the instructions after the tracepoint's
own into the pad where nothing else reaches them; where something does, the tracepoint is
collected through a trap, and tstart's output and `monitor tracepoints` say why.

programs/ftrace_short.c: functions in assembly whose first instructions are short, each with a
known reason to take a jump or not (see the file); main(calls) calls each once per iteration.
"""

import platform
import re

import pytest

from scenario import TO_MAIN, TO_THE_END, FastTrace, ftrace

pytestmark = [
    pytest.mark.tpagent_only("gdbserver's qTMinFTPILen is 5: gdb refuses these instructions"),
    pytest.mark.skipif(platform.machine() != "x86_64", reason="x86-64 instruction lengths"),
]

PROGRAM = "ftrace_short"
CALLS = 5
# Why each function's tracepoint is collected through a trap (tstart's lines, monitor's).
TRAPS = {
    "loop_head": r"is reached from elsewhere in .*ftrace_short",
    "leaf_ret": r"the jump would displace a return at 0x[0-9a-f]+ and the instruction after it",
    "table_target": r"is reached from elsewhere in .*ftrace_short",
    "ptr_target": r"is reached from elsewhere in .*ftrace_short",
}


def define_all(s: FastTrace) -> str:
    return s.define(
        ftrace("short_entry", "collect $rdi"),
        ftrace("padded_ret", "collect $rdi"),
        ftrace("loop_head", "collect $rdi"),
        ftrace("leaf_ret", "collect $rdi"),
        ftrace("table_target", "collect $rax"),
        ftrace("ptr_target", "collect $rax"),
    )


def addresses(r, command: str) -> dict[int, int]:
    """Tracepoint number -> address, from `info tracepoints`."""
    return {int(n): int(a, 16) for n, a in re.findall(r"^(\d+)\s+fast tracepoint\s+\S+\s+\S+\s+(0x[0-9a-f]+)",
                                                       r.of(command), re.M)}


class ToldTrace(FastTrace):
    # tstart says which tracepoints run at trap speed.
    quiet_tstart = False


def test_short_instructions_take_a_jump_or_a_trap_that_says_why(e2e):
    s = ToldTrace(e2e, PROGRAM, str(CALLS), pie=True)
    walk = s.walk("$rdi", tracepoint=2)
    walk_padded = s.walk("$rdi", tracepoint=3)
    r = s.gdb(
        *TO_MAIN, define_all(s), "info tracepoints", "print/x &short_entry",
        "break finished", "tstart", "monitor tracepoints", "continue", "tstop", "tstatus",
        walk,
        "tfind none", "tfind tracepoint 4", "print $rdi",
        "tfind none", "tfind tracepoint 6", "print $rax",
        walk_padded,
        *TO_THE_END,
    )
    numbers = {"short_entry": 2, "padded_ret": 3, "loop_head": 4, "leaf_ret": 5, "table_target": 6,
               "ptr_target": 7}
    where = addresses(r, "info tracepoints")
    assert len(where) == 6, r.of("info tracepoints")
    assert where[2] == int(r.value("print/x &short_entry"), 16)

    told, listed = r.of("tstart"), r.of("monitor tracepoints")
    for name, why in TRAPS.items():
        n = numbers[name]
        line = rf"Fast tracepoint {n} at 0x{where[n]:x} is collected through a trap \(trap speed\): .*{why}"
        assert re.search(line, told), (name, told)
        assert re.search(line, listed), (name, listed)
    assert re.search(rf"Fast tracepoint 2 at 0x{where[2]:x} jumps to its pad \(5 bytes of instructions "
                     r"displaced\)", listed), listed
    # mov; ret; int3: the window ends in padding after the return, which never runs.
    assert re.search(rf"Fast tracepoint 3 at 0x{where[3]:x} jumps to its pad \(5 bytes of instructions "
                     r"displaced\)", listed), listed
    assert "Fast tracepoint 2 " not in told and "Fast tracepoint 3 " not in told, told

    # Every call collected, fast or trapped, with its values; the program as it runs alone.
    r.trace_stopped("by a tstop command", 6 * CALLS)
    assert [f[2] for f in r.frames(walk)] == list(range(CALLS)), r.of(walk)
    assert [f[2] for f in r.frames(walk_padded)] == list(range(CALLS)), r.of(walk_padded)
    assert r.value("print $rdi") == "1"  # loop_head(i + 1), first call
    assert r.value("print $rax") == "0"  # table_target's xor has not run yet
    s.ends_as_natively(r.of("continue", 2))


def test_a_short_instruction_frame_reads_back_from_a_trace_file(e2e):
    """The fast tracepoint at short_entry's 2-byte first instruction: the frames saved by
    `tsave -r` read back in a new gdb as in the live run."""
    s = FastTrace(e2e, PROGRAM, str(CALLS), pie=True)
    saved = e2e.tmp / "short.tf"
    live = s.trace_and_save(s.define(ftrace("short_entry", "collect $rdi, $rsp")), f"tsave -r {saved}",
                            anchor="short_entry")
    walk = s.walk("$rdi")
    r = s.open_trace_file(saved, walk, live=live)
    assert [f[2] for f in r.frames(walk)] == list(range(CALLS)), r.of(walk)


def test_a_thread_that_will_return_inside_the_jump_keeps_it_a_trap(e2e):
    """calls_out's jump would displace its `call *%rdi` and the instruction after it, where
    the callee returns. gdb stops the program inside callee(), called from there, then starts
    the trace: a jump would be returned into, so a trap collects the tracepoint, tstart says
    so, and the program ends as it does alone; the calls after the first are collected."""
    s = ToldTrace(e2e, PROGRAM, str(CALLS), pie=True)
    r = s.gdb(
        *TO_MAIN, "break callee", "continue", s.define(ftrace("calls_out", "collect $rdi")),
        "tstart", "delete", "break finished", "continue", "tstop", "tstatus", *TO_THE_END,
    )
    assert re.search(r"^Fast tracepoint 3 at 0x[0-9a-f]+ is collected through a trap \(trap speed\): "
                     r"thread \d+ will return or resume at 0x[0-9a-f]+, inside the 5 bytes the jump displaces",
                     r.of("tstart"), re.M), r.of("tstart")
    r.trace_stopped("by a tstop command", CALLS - 1)
    s.ends_as_natively(r.of("continue", 3))


def test_stepping_through_a_jump_that_displaces_several_instructions(e2e):
    """gdb stops at short_entry (its breakpoint in front of the jump) and steps three
    instructions: xor and mov are the jump's displaced pair, lea is past it. Each stepi stops
    at the program's next instruction (the mov inside the jump's bytes too: it runs from its
    copy in the pad when the thread goes on), the step off the breakpoint collects, and every
    call is collected once; the program ends as it does alone."""
    s = ToldTrace(e2e, PROGRAM, str(CALLS), pie=True)
    r = s.gdb(
        *TO_MAIN, s.define(ftrace("short_entry", "collect $rdi")), "tstart", "break short_entry",
        "continue", "stepi", "print $pc", "stepi", "print $pc", "stepi", "print $pc", "print $rdx",
        "delete", "break finished", "continue", "tstop", "tstatus", *TO_THE_END,
    )
    assert r.of("tstart").strip() == "", r.of("tstart")
    assert re.search(r"<short_entry\+2>", r.value("print $pc")), r.value("print $pc")
    assert re.search(r"<short_entry\+5>", r.value("print $pc", 1)), r.value("print $pc", 1)
    assert re.search(r"<short_entry\+9>", r.value("print $pc", 2)), r.value("print $pc", 2)
    assert r.value("print $rdx") == "0"  # mov %rdi,%rdx ran, from the pad, for short_entry(0)
    r.trace_stopped("by a tstop command", CALLS)
    s.ends_as_natively(r.of("continue", 3))


def test_a_window_that_cannot_be_displaced_takes_a_short_jump_to_padding(e2e):
    """jump_after: mov (2 bytes); jmp (2) over dead code; ...; ret; int3 x 8. The jump cannot displace the
    jmp and the code after it, so the tracepoint gets a 2-byte jmp at the mov to a slot in the
    int3 padding, which holds the jump to the pad: fast, every call collected, the program's
    bytes as before to gdb (both patches hidden), and what it runs is the two jumps."""
    s = ToldTrace(e2e, PROGRAM, str(CALLS), pie=True)
    walk = s.walk("$rdi", tracepoint=2)
    r = s.gdb(*TO_MAIN, s.define(ftrace("*jump_after", "collect $rdi")), "print/x &jump_after",
              "x/24xb jump_after", "break finished", "tstart", "monitor tracepoints",
              "x/24xb jump_after", s.read_code("&jump_after", 24), "continue", "tstop", "tstatus",
              walk, *TO_THE_END)
    assert r.of("tstart").strip() == "", r.of("tstart")
    start = int(r.value("print/x &jump_after"), 16)
    m = re.search(rf"Fast tracepoint 2 at 0x{start:x} jumps to its pad through a short jump to "
                  r"0x([0-9a-f]+) \(2 bytes of instructions displaced\)", r.of("monitor tracepoints"))
    assert m, r.of("monitor tracepoints")
    slot = int(m.group(1), 16)
    assert start + 12 <= slot <= start + 20 - 5, hex(slot)  # in the padding after the ret
    assert r.of("x/24xb jump_after") == r.of("x/24xb jump_after", 1)
    ran = [int(b, 16) for b in r.of(s.read_code("&jump_after", 24)).split()]
    assert ran[0:2] == [0xEB, slot - (start + 2)], ran
    assert ran[slot - start] == 0xE9, ran
    r.trace_stopped("by a tstop command", CALLS)
    assert [f[2] for f in r.frames(walk)] == list(range(CALLS)), r.of(walk)
    s.ends_as_natively(r.of("continue", 2))
