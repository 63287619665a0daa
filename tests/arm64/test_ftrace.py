"""Fast tracepoints (ftrace) on the arm64 board: a B to a pad near the code, which saves the
registers and calls the collector of tpagent's in-process agent (preloaded from /payload), runs
the displaced instruction rebuilt for the pad and branches back. tpagent only: Debian's arm64
libinproctrace.so crashes every program it is preloaded into (../../shared facts: its
constructor runs before a static initialiser it needs), so gdbserver has no fast tracepoint
to compare with here.

The programs are the x86-64 ftrace tests' own (tests/e2e/programs): ftrace_loop.c,
ftrace_threads.c, ftrace_shlib.c with libftrace_lib.so; every collected value follows from
the iteration, so a frame's values say which call it holds, and each program must end as it
does untraced.
"""

import re

import pytest

import shared
from board import BoardFastTrace, BoardScenario
from scenario import TO_MAIN, TO_THE_END, ftrace, trace_to, tracepoint_address

pytestmark = pytest.mark.tpagent_only("Debian's arm64 in-process agent crashes the programs it is loaded into")

PROGRAM = "ftrace_loop"


@pytest.mark.parametrize("pie", [True, False], ids=["pie", "non_pie"])
def test_registers_and_globals(arm64, pie):
    """ftrace traced: each of 5 hits records the registers (x0 = the iteration, x1 = 3, pc =
    the tracepoint, sp as the thread had it) and the globals as the previous call left them;
    registers the pad does not save (FP/SIMD) are unavailable, tpidr (TLS) is there, and so
    are the pointer-authentication masks where the CPU has them (gdb strips signed return
    addresses with them when it unwinds)."""
    s = BoardFastTrace(arm64, PROGRAM, "5", pie=pie)
    define = s.define(ftrace("traced", "collect $regs", "collect hits, current"))
    walk = s.walk("$x0", "$x1", "$pc", "hits", "current.id", "current.square")
    r = s.gdb(
        *TO_MAIN, "print/x $tpidr", "print/x $pauth_cmask", "print/x $pauth_dmask", define, *trace_to("finished"),
        "tfind start", "tdump", "print untouched", "print $v0.d.u[0]", "print/x $tpidr",
        "print/x $pauth_cmask", "print/x $pauth_dmask",
        "print $sp == (unsigned long) $x29", "tfind 3", "print $x0", "print current",
        walk, *TO_THE_END,
    )
    tp = tracepoint_address(r.of(define), 2, fast=True, source=PROGRAM)
    r.stopped_at(1, r"Breakpoint 3, finished \(\)")
    r.trace_stopped("by a tstop command", 5)
    assert r.found("tfind start") == (0, 2)
    r.dumped(
        2, 0,
        r"^x0\s+0x0\s+0$",
        r"^x1\s+0x3\s+3$",
        rf"^pc\s+0x{tp:x}\s+0x{tp:x} <traced\+\d+>$",
        r"^hits = 0$",
        r'^current = \{id = 0, square = 0, tag = "ftrace\\000"\}$',
    )
    assert r.value("print untouched") == "<unavailable>"
    assert r.value("print $v0.d.u[0]") == "<unavailable>"
    # tpidr: the thread's TLS base, as the live thread had it.
    assert r.value("print/x $tpidr", 1) == r.value("print/x $tpidr", 0) != "0x0"
    # The masks: the process's, as the live thread has them ("void" on a CPU without them).
    for mask in ("print/x $pauth_cmask", "print/x $pauth_dmask"):
        assert r.value(mask, 1) == r.value(mask, 0) != "<unavailable>", (r.of(mask, 0), r.of(mask, 1))
    # At -O0, traced() has set x29 = sp by its first line.
    assert r.value("print $sp == (unsigned long) $x29") == "1"
    assert r.found("tfind 3") == (3, 2)
    assert r.value("print $x0") == "3"
    assert r.value("print current") == '{id = 2, square = 4, tag = "ftrace\\000"}'
    expected = [(k, 2, k, 3, tp, k, max(k - 1, 0), max(k - 1, 0) ** 2) for k in range(5)]
    assert r.frames(walk) == expected, r.of(walk)
    s.ends_as_natively(r.of("continue", 2))


def test_shared_library(arm64):
    shared.fast_shared_library(
        BoardFastTrace(arm64, "ftrace_shlib", "6", program=arm64.board.payload / "ftrace_shlib"), shared.AARCH64
    )


@pytest.mark.parametrize("where", ["pie", "non_pie", "shared_library"])
def test_frames_read_with_only_the_sysroot(arm64, where):
    """gdb-multiarch with only `set sysroot`: a fast frame in a PIE, a non-PIE and a shared
    library prints its collected arguments and locals (gdb's arm64 unwinder analyses the
    function's prologue, code that tpagent serves from the live program's read-only image)."""
    if where == "shared_library":
        s = BoardFastTrace(arm64, "ftrace_shlib", "4", program=arm64.board.payload / "ftrace_shlib")
        shared.fast_frame_reads_the_program_image(s, "library")
    else:
        shared.fast_frame_reads_the_program_image(BoardFastTrace(arm64, PROGRAM, "4", pie=where == "pie"), "program")


def test_condition_locals_and_memory(arm64):
    """The condition interpreted or compiled in the program (test_condition_runs_as_native_arm64_code
    checks which)."""
    shared.fast_condition_locals_and_memory(BoardFastTrace(arm64, PROGRAM, "10"))


def test_four_threads(arm64):
    shared.fast_four_threads(BoardFastTrace(arm64, "ftrace_threads"), shared.AARCH64)


def test_function_entry_min_length_and_the_jump_hidden(arm64):
    """ftrace *traced: the function's first instruction (stp x29, x30, [sp, #-N]!, which
    moves sp) runs from the pad. qTMinFTPILen is 4 (one instruction); while the trace runs,
    reading the code gives the program's instruction, not the B that replaced it."""
    s = BoardFastTrace(arm64, PROGRAM, "4")
    define = s.define(ftrace("*traced", "collect $sp, $x0"))
    read_code = 'python gdb.execute("maint packet m%x,4" % int(gdb.parse_and_eval("(unsigned long) traced")))'
    walk = s.walk("$x0")
    r = s.gdb(
        *TO_MAIN, "maint packet qTMinFTPILen", read_code, define, "break halfway", "tstart", "continue",
        read_code, "tstop", "tstatus", walk, *TO_THE_END,
    )
    assert re.search(r'received: "4"', r.of("maint packet qTMinFTPILen")), r.of("maint packet qTMinFTPILen")
    before, during = (re.search(r'received: "([0-9a-f]{8})"', r.of(read_code, n)).group(1) for n in (0, 1))
    assert before == during
    r.trace_stopped("by a tstop command", 2)
    assert [row[2] for row in r.frames(walk)] == [0, 1], r.of(walk)
    s.ends_as_natively(r.of("continue", 2))


def test_in_the_c_library(arm64):
    """ftrace atoi: a pad within a B's reach of the board's libc (mapped far from the
    executable), collecting the registers at main's one call, atoi(argv[1]); the string
    itself (on the stack) was not collected. The program ends as untraced."""
    s = BoardFastTrace(arm64, PROGRAM, "3")
    define = s.define(ftrace("atoi", "collect $regs"))
    r = s.gdb(
        *TO_MAIN, define, *trace_to("finished"), "tfind 0", "info registers pc", "x/s $x0", *TO_THE_END,
    )
    tp = tracepoint_address(r.of(define), 2, fast=True)
    assert r.status().collected == 1, r.status()
    shown = r.of("info registers pc")
    assert re.search(rf"^pc\s+0x{tp:x}\s+0x{tp:x} <atoi\+\d+>$", shown, re.M), shown
    assert "Cannot access memory" in r.of("x/s $x0"), r.of("x/s $x0")
    s.ends_as_natively(r.of("continue", 2))


@pytest.mark.parametrize("variant", [None, "ftrace_loop_static", "ftrace_loop_musl_static", "ftrace_loop_musl"],
                         ids=["dynamic", "static", "musl_static", "musl_dynamic"])
def test_agent_placed_at_tstart(arm64, variant):
    """A program started without the in-process agent, dynamic, static (no loader at all), or
    against musl, static or dynamic: at tstart tpagent places the agent's image
    (libtpagent-inproc-image.so) in it, its start called in a stopped thread (arm64's calling
    convention: arguments in x0.., the return to a brk in lr), then puts the thread back as it
    was; the image finds a thread's state by tpidr_el0."""
    program = arm64.board.payload / variant if variant else None
    if program and not program.exists():
        pytest.skip(f"no {variant} in the payload (musl-dev:arm64 is missing on the host)")
    s = BoardScenario(arm64, PROGRAM, "4", program=program)
    define = s.define(ftrace("traced", "collect n"))
    r = s.gdb(*TO_MAIN, define, *trace_to("finished"), "tfind 3", "print n", *TO_THE_END)
    assert r.of("tstart").strip() == "", r.of("tstart")
    r.trace_stopped("by a tstop command", 4)
    assert r.found("tfind 3") == (3, 2)
    assert r.value("print n") == "3"
    s.ends_as_natively(r.of("continue", 2))


def test_passcount_and_state_variables(arm64):
    """teval and a pass count on a fast tracepoint: each frame holds the variables as that hit
    left them, and the fourth hit stops the trace in the program at once."""
    s = BoardFastTrace(arm64, PROGRAM, "8")
    define = s.define(
        "tvariable $calls = 0",
        "tvariable $sum = 100",
        ftrace("traced", "teval $calls = $calls + 1", "teval $sum = $sum + n", "collect $calls, $sum"),
        "passcount 4 2",
    )
    walk = s.walk("$calls", "$sum")
    r = s.gdb(*TO_MAIN, define, "break finished", "tstart", "continue", "tstatus", "info tvariables", walk, *TO_THE_END)
    r.trace_stopped("by tracepoint 2", 4)
    assert re.search(r"^\$calls\s+0\s+4\s*$", r.of("info tvariables"), re.M), r.of("info tvariables")
    assert r.frames(walk) == [(k, 2, k + 1, 100 + k * (k + 1) // 2) for k in range(4)], r.of(walk)
    s.ends_as_natively(r.of("continue", 2))


def test_breakpoint_stepi_and_write_at_a_fast_tracepoint(arm64):
    """A breakpoint at the fast tracepoint's address stops each pass there; stepi from it runs
    the program's instruction (an ADRP: x0 gets hits' page) to the next one; a write of the
    instruction's own word during the run reads back as the program's instruction, never the
    B; every pass makes exactly one frame and the program ends as untraced."""
    passes = 4
    s = BoardFastTrace(arm64, PROGRAM, str(passes))
    define = s.define(ftrace("traced", "collect n"))
    read_word = 'python gdb.execute("maint packet m%x,4" % int(gdb.parse_and_eval("$tp")))'
    walk = s.walk("n")
    r = s.gdb(
        *TO_MAIN, define, "break traced", "tstart", "continue", "set $tp = $pc", read_word,
        "set var *(unsigned int *) $tp = *(unsigned int *) $tp", read_word,
        "stepi", "print $pc - $tp", "print/x $tp", "print/x $x0 == ((unsigned long) &hits & ~0xfff)",
        *["continue"] * (passes - 1), "delete", "break finished", "continue", "tstop", "tstatus",
        walk, *TO_THE_END,
    )
    tp = tracepoint_address(r.of(define), 2, fast=True)
    for k in range(passes):
        assert re.search(rf"Breakpoint 3, traced \(n={k}, scale=3\)", r.of("continue", 1 + k)), r.of("continue", 1 + k)
    words = [re.search(r'received: "([0-9a-f]{8})"', r.of(read_word, n)).group(1) for n in (0, 1)]
    # The program's instruction (little-endian ADRP: top byte 0x90..0xf0 with bit 7 set), twice.
    assert words[0] == words[1] and int(words[0][6:], 16) & 0x9F == 0x90, words
    assert r.value("print $pc - $tp") == "4"
    assert r.value("print/x $x0 == ((unsigned long) &hits & ~0xfff)") == "0x1"
    r.trace_stopped("by a tstop command", passes)
    assert r.frames(walk) == [(k, 2, k) for k in range(passes)], r.of(walk)
    assert r.value("print/x $tp") == f"0x{tp:x}"
    s.ends_as_natively(r.of("continue", passes + 2))


def test_condition_runs_as_native_arm64_code(arm64):
    """A fast tracepoint's condition is compiled to arm64 code placed in the program (tpagent
    --debug says when it falls back to the interpreter: it must not), and selects the hits."""
    s = BoardFastTrace(arm64, PROGRAM, "9", options=("--debug",))
    define = s.define(ftrace("traced if n % 3 == 0 && n > 2", "collect n"))
    walk = s.walk("n")
    r = s.gdb(*TO_MAIN, define, *trace_to("finished"), walk, *TO_THE_END)
    assert "expression interpreted" not in s.server.refresh()
    assert r.frames(walk) == [(0, 2, 3), (1, 2, 6)], r.of(walk)
    s.ends_as_natively(r.of("continue", 2))


def test_landing_pads_in_bti_guarded_code(arm64):
    """liba64_bti_lib.so is BTI-guarded (its code's smaps VmFlags say bt where the CPU has BTI):
    a fast tracepoint on called()'s first instruction, the `bti c` its indirect calls land on,
    is refused at tstart naming the reason (the jump would make the call fault); one on its
    body collects every call, and the program ends as untraced."""
    s = BoardFastTrace(arm64, "a64_bti", "5", program=arm64.board.payload / "a64_bti")
    s.quiet_tstart = False  # the first tstart is refused on purpose
    flags = arm64.board_command(f"grep -A25 'r-xp.*liba64_bti_lib' /proc/{s.pid}/smaps | grep -m1 VmFlags")
    refused = s.define(ftrace("*called", "collect v"))
    body = s.define(ftrace(f"a64_bti_lib.c:{arm64.line('a64_bti_lib', 'called_body')}", "collect v"))
    walk = s.walk("v")
    r = s.gdb(*TO_MAIN, flags, refused, "tstart", "delete 2", body, *trace_to("finished"), walk, *TO_THE_END)
    if " bt" not in r.of(flags):
        pytest.skip(f"the board does not guard liba64_bti_lib's code (no BTI): {r.of(flags).strip()}")
    assert re.search(r"landing pad .*BTI", r.of("tstart")), r.of("tstart")
    assert r.frames(walk) == [(k, 3, k) for k in range(5)], r.of(walk)
    s.ends_as_natively(r.of("continue", 2))


def test_no_room_for_a_pad(arm64):
    """no_pad_room.c reserves every free address within a B's reach of its code: tstart
    refuses the fast tracepoint with a message naming it and why, the session goes on, and
    the program, untouched, ends as untraced."""
    s = BoardFastTrace(arm64, "no_pad_room", "5")
    s.quiet_tstart = False  # tstart is refused on purpose
    define = s.define(ftrace("traced", "collect n"))
    r = s.gdb(*TO_MAIN, define, "tstart", "tstatus", "continue")
    assert re.search(r"fast tracepoint 2 at 0x[0-9a-f]+: no free memory within reach", r.of("tstart")), r.of("tstart")
    assert "Trace is running" not in r.of("tstatus"), r.of("tstatus")
    s.server.wait_for(r"^hits=5 total=\d+ sum=\d+ right$")


def test_library_loaded_during_the_run(arm64):
    """A fast tracepoint pending in libftrace_lib.so, which the program dlopen()s halfway
    through a run with another fast tracepoint (in the executable): when the library loads,
    gdb sends the tracepoint and it gets a jump and a pad within reach of the library at once;
    every later call is a frame, and the program ends as untraced."""
    s = BoardFastTrace(
        arm64, "ftrace_dlopen", "8", "/payload/libftrace_lib.so",
        program=arm64.board.payload / "ftrace_dlopen", options=("--debug",),
    )
    define = s.define(
        ftrace("loaded"),
        "set breakpoint pending on",
        ftrace("lib_traced", "collect $regs", "collect lib_hits"),
    )
    walk = s.walk("$x0", "lib_hits", tracepoint=3)
    r = s.gdb(*TO_MAIN, define, *trace_to("finished"), "info tracepoints", walk, *TO_THE_END)
    assert re.search(r"in lib_traced at .*ftrace_lib\.c", r.of("info tracepoints")), r.of("info tracepoints")
    assert [row[1:] for row in r.frames(walk)] == [(3, 10 * (4 + k), k) for k in range(4)], r.of(walk)
    # A jump and a pad (--debug says so), not a trap standing in for them.
    log = s.server.refresh()
    assert len(re.findall(r"fast tracepoint at 0x[0-9a-f]+: pad 0x[0-9a-f]+, 4 bytes replaced", log)) == 2, log[-3000:]
    assert "collected through a trap" not in log
    s.ends_as_natively(r.of("continue", 2))


def test_relocate_with_gdb_is_ignored(arm64):
    """--relocate-with-gdb on arm64: gdb 13 relocates x86 instructions only (asked for an arm64
    one it stops with an internal error), so tpagent says at start-up that it ignores the
    option, never sends qRelocInsn, and relocates the instructions itself."""
    s = BoardFastTrace(arm64, PROGRAM, "3", options=("--relocate-with-gdb",))
    s.quiet_tstart = False  # remote debugging output
    define = s.define(ftrace("traced", "collect n"))
    walk = s.walk("n")
    r = s.gdb(*TO_MAIN, "set debug remote 1", define, *trace_to("finished"), "set debug remote 0", walk, *TO_THE_END)
    assert "--relocate-with-gdb is ignored here" in s.server.refresh()
    assert "qRelocInsn:" not in r.output
    assert r.frames(walk) == [(k, 2, k) for k in range(3)], r.of(walk)
    s.ends_as_natively(r.of("continue", 2))
