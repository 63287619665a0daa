"""Tracing never harms the traced program: whatever else happens while a trace runs (the
memory a tracepoint collects through goes away, gdb steps over or through a tracepoint,
puts a breakpoint on it, writes into its instruction, the program execs another one), the
program does exactly what it does without a debugger (the same output, the same exit
status) and every pass over a tracepoint makes exactly one trace frame.

programs/never_harm.c: main calls probe(p, i) for i = 0 .. 5; the traced line (marked
"traced") is the single instruction addl $1, hits(%rip) (7 bytes), between the lines
marked "before" and "after"; ready() runs before the first pass, halfway() before pass 3,
finished() after the last one. programs/never_harm_exec_target.c is the program it execs.
Both are non-PIE (see test_ftrace.py), so that gdbserver runs the same tests; the ones it
fails are marked tpagent_only, with what gdbserver does instead.
"""

import re

import pytest

from harness import assert_in_order
from scenario import TO_MAIN, TO_THE_END, FastTrace, dumped_bytes, examined_bytes, ftrace, trace, tracepoint_address

PROGRAM = "never_harm"
TARGET = "never_harm_exec_target"
PASSES = 6
HALF = PASSES // 2
WORDS = 16
# TO_MAIN's breakpoint is gone: the tracepoint is number 2, gdb's next breakpoint 3.
TP = 2


# --------------------------------------------------------------------------- running


class Run(FastTrace):
    """never_harm MODE PASSES under the server with the agent preloaded, its native run for
    reference, and a tracepoint (KIND: ftrace or trace) on the traced line with ACTIONS.

    gdb's commands start with the tracepoint's definition, $tp set to its address (for the
    commands that follow) and "x/2i $tp": the traced instruction and the next one, whose
    address is where stepping over it must land."""

    def __init__(self, e2e, mode: str, *extra_args: str, kind: str = "ftrace", actions=("collect i",)):
        super().__init__(e2e, PROGRAM, mode, str(PASSES), *extra_args)
        self.fast = kind == "ftrace"
        self.definition = self.define((ftrace if self.fast else trace)(self.at("traced"), *actions))

    def gdb(self, *commands: str):
        where = f"info line {self.at('traced')}"
        r = super().gdb(*TO_MAIN, self.definition, where, "set $tp = $_", "x/2i $tp", *commands)
        self.address = tracepoint_address(r.of(self.definition), TP, fast=self.fast, source=PROGRAM)
        listed = re.findall(r"^(?:=> )?\s*0x([0-9a-f]+) <probe\+\d+>:\s+(\S+)", r.of("x/2i $tp"), re.M)
        assert [int(a, 16) for a, _ in listed][:1] == [self.address], r.of("x/2i $tp")
        assert listed[0][1] == "addl", r.of("x/2i $tp")
        self.next_address = int(listed[1][0], 16)
        assert self.next_address == self.address + 7, r.of("x/2i $tp")
        return r

    def trace_from_the_line_before(self) -> tuple[str, ...]:
        """Stop on the line before the traced one (that breakpoint gone), then tstart."""
        return (f"break {self.at('before')}", "continue", "delete 3", "tstart")

    @staticmethod
    def cont(r, nth: int) -> str:
        """What the nth "continue" of the test's own commands printed (TO_MAIN's is not
        counted)."""
        return r.of("continue", nth + 1)

    def ends_as_natively_at(self, r, nth: int) -> None:
        """The nth continue ran the program to its end, which was the native run's."""
        self.ends_as_natively(self.cont(r, nth))


# The end of every run: the trace stopped at finished(), its frames read, the program run
# on to its end.
END = ("continue", "tstop", "tstatus")


def one_frame_per_pass(r, walk: str) -> None:
    """PASSES frames, the kth from pass k, in order."""
    assert_in_order(Run.cont(r, end_continue(r)), r"Breakpoint \d+, finished \(\)")
    last = r.commands.count("tstatus") - 1
    assert r.status(last).collected == PASSES, r.status(last)
    assert r.frames(walk) == [(k, TP, k) for k in range(PASSES)], r.of(walk)


def end_continue(r) -> int:
    """Which of the test's continues (as Run.cont counts them) is END's: the last before
    tstop."""
    stop = r.commands.index("tstop")
    return sum(1 for c in r.commands[:stop] if c == "continue") - 2


def step_to_traced_instruction(s) -> str:
    """stepi until the pc is at the tracepoint (from a line before it, in its function)."""
    return s.file("while $pc != $tp", "  stepi", "end")


# --------------------------------------------------------------------------- 1. memory that goes away


def memory_walk(run: Run) -> str:
    """Every frame: "frame N tp T: i", then p[0]@16 on a line of its own."""
    row = '  printf "frame %d tp %d: %ld\\n", $trace_frame, $tracepoint, i'
    return run.file("tfind start", "while $trace_frame != -1", row, "  output p[0]@16", "  echo \\n", "  tfind", "end")


CRASHES = pytest.mark.tpagent_only("gdbserver's in-process agent crashes the program (SIGSEGV)")


def page_words(first: int) -> str:
    """How gdb prints p[0]@16 while p[0] == first (p[k] == 1000 + k for the others)."""
    return "{" + ", ".join([str(first)] + [str(1000 + k) for k in range(1, WORDS)]) + "}"


@pytest.mark.parametrize(
    "mode, kind",
    [
        pytest.param("unmap", "ftrace", marks=CRASHES),
        pytest.param("protect", "ftrace", marks=CRASHES),
        pytest.param("unmap", "trace", marks=pytest.mark.tpagent_only("gdbserver collects unmapped memory as zeros")),
        ("protect", "trace"),
    ],
)
def test_collecting_through_memory_that_goes_away(e2e, mode, kind):
    """collect p[0]@16 where p points into a page the program unmaps (or makes
    inaccessible, PROT_NONE) before pass 3: the tracepoint goes on collecting every pass
    without harming the program. The frames from before hold the page's words; those from
    after have none, except where a trap tracepoint's server reads a PROT_NONE page as
    gdb's own reads do (ptrace and /proc/PID/mem may), which still holds what pass 2 left.
    A fast tracepoint collects in the program itself, where a PROT_NONE page cannot be
    read."""
    run = Run(e2e, mode, kind=kind, actions=("collect i, p[0]@16",))
    walk = memory_walk(run)
    # The trace starts while the page is there (at ready(), before the first pass).
    r = run.gdb("break ready", "continue", "break finished", "tstart", *END, walk, *TO_THE_END)
    assert "SIGSEGV" not in r.output and "SIGBUS" not in r.output, r.transcript
    assert_in_order(run.cont(r, 0), r"Breakpoint 3, ready \(\)")
    assert_in_order(run.cont(r, 1), r"Breakpoint 4, finished \(\)")
    assert r.status().collected == PASSES, r.status()
    rows = re.findall(r"^frame (\d+) tp (\d+): (\d+)\n(.*)$", r.of(walk), re.M)
    assert [tuple(map(int, row[:3])) for row in rows] == [(k, TP, k) for k in range(PASSES)], r.of(walk)
    there = [page_words(k) for k in range(HALF)]
    readable_by_the_server = kind == "trace" and mode == "protect"
    gone = [page_words(HALF - 1) if readable_by_the_server else "<unavailable>"] * (PASSES - HALF)
    assert [row[3] for row in rows] == there + gone, r.of(walk)
    run.ends_as_natively_at(r, 2)


# --------------------------------------------------------------------------- 2. stepping over a fast tracepoint


def test_stepi_over_a_fast_tracepoint(e2e):
    """From the line before the fast tracepoint, stepi up to it and once more: the step
    executes the traced instruction (the program's, not a jump pad's) and stops at the
    program's next instruction, collecting that pass once; later passes are traced as
    usual."""
    run = Run(e2e, "run")
    step = step_to_traced_instruction(run)
    walk = run.walk("i")
    r = run.gdb(
        *run.trace_from_the_line_before(), step, "print/x $pc", "stepi", "print/x $pc", "x/i $pc", "info symbol $pc",
        "print hits", "tstatus", "break finished", *END, walk, *TO_THE_END,
    )
    assert r.value("print/x $pc") == f"0x{run.address:x}"
    assert r.value("print/x $pc", 1) == f"0x{run.next_address:x}", r.transcript
    assert r.of("stepi").startswith(f"{run.line('after')}\t"), r.of("stepi")
    assert_in_order(r.of("x/i $pc"), rf"^=> 0x{run.next_address:x} <probe\+\d+>:\s+mov\s")
    symbol = r.of("info symbol $pc")
    assert re.fullmatch(r"probe \+ \d+ in section \.text( of .*)?\n", symbol), symbol
    assert r.value("print hits") == "1"
    assert r.status().collected == 1, r.status()  # the step's pass, once
    one_frame_per_pass(r, walk)
    run.ends_as_natively_at(r, 2)


def test_next_over_a_fast_tracepoint(e2e):
    """From the line before the fast tracepoint, next, next: the second steps over the
    traced line to the one after it, in the program's function, collecting that pass once."""
    run = Run(e2e, "run")
    walk = run.walk("i")
    r = run.gdb(
        *run.trace_from_the_line_before(), "next", "next", "print/x $pc", "print hits", "tstatus",
        "break finished", *END, walk, *TO_THE_END,
    )
    assert r.of("next").startswith(f"{run.line('traced')}\t"), r.of("next")
    assert "Cannot find bounds" not in r.output, r.of("next", 1)
    assert r.of("next", 1).startswith(f"{run.line('after')}\t"), r.of("next", 1)
    assert r.value("print/x $pc") == f"0x{run.next_address:x}"
    assert r.value("print hits") == "1"
    assert r.status().collected == 1, r.status()  # the step's pass, once
    one_frame_per_pass(r, walk)
    run.ends_as_natively_at(r, 2)


# --------------------------------------------------------------------------- 3. stepping through, every pass


def through_each_pass(e2e, run, how: str) -> list[str]:
    """The commands taking every pass through the traced line HOW: "continue" runs
    through, "next" and "stepi" step through it from the line before, "watch" single-steps
    everything (a software watchpoint on watched, which each pass sets) up to the end of
    the pass."""
    if how == "continue":
        return []
    if how == "watch":
        per_pass = ["continue"] * PASSES
        return ["set can-use-hw-watchpoints 0", "watch watched", *per_pass, "delete 3"]
    before = f"break {run.at('before')}"
    if how == "next":
        per_pass = ["continue", "next", "next"]
    else:
        per_pass = ["continue", step_to_traced_instruction(run), "stepi", "stepi"]
    return [before, *per_pass * PASSES, "delete 3"]


@pytest.mark.parametrize(
    "kind, how",
    [
        ("trace", "continue"),
        ("trace", "next"),
        ("trace", "stepi"),
        ("trace", "watch"),
        ("ftrace", "continue"),
        ("ftrace", "watch"),
    ],
)
def test_one_frame_per_pass_however_gdb_goes_through(e2e, kind, how):
    """Every pass over the tracepoint makes one frame, whether the program runs through it
    or gdb steps through it (next, stepi, or single-stepping for a software watchpoint),
    and the program runs as natively."""
    run = Run(e2e, "run", kind=kind)
    walk = run.walk("i")
    passes = through_each_pass(e2e, run, how)
    r = run.gdb("tstart", *passes, "break finished", *END, walk, *TO_THE_END)
    if how == "next":
        for k in range(PASSES):
            assert r.of("next", 2 * k + 1).startswith(f"{run.line('after')}\t"), r.of("next", 2 * k + 1)
    if how == "stepi":
        for k in range(PASSES):
            assert r.of("stepi", 2 * k).startswith(f"{run.line('after')}\t"), r.of("stepi", 2 * k)
    if how == "watch":
        for k in range(PASSES):
            assert_in_order(
                run.cont(r, k),
                r"\bWatchpoint 3: watched$",
                rf"^Old value = {k}$",
                rf"^New value = {k + 1}$",
            )
    one_frame_per_pass(r, walk)
    run.ends_as_natively_at(r, end_continue(r) + 1)


# --------------------------------------------------------------------------- 4. a breakpoint on it, writes into it


@pytest.mark.parametrize(
    "always_inserted, when",
    [("off", "before-tstart"), ("on", "before-tstart"), ("on", "after-tstart")],
)
def test_breakpoint_at_a_fast_tracepoint(e2e, always_inserted, when):
    """break *ADDRESS on the fast tracepoint's address: each continue stops there once per
    pass, and each pass still makes one frame. With always-inserted off gdb inserts the
    breakpoint when it resumes, after tstart either way; with it on, when it is set."""
    run = Run(e2e, "run")
    walk = run.walk("i")
    start = ["tstart", "break *$tp"] if when == "after-tstart" else ["break *$tp", "tstart"]
    r = run.gdb(
        f"set breakpoint always-inserted {always_inserted}", *start, "break finished", *["continue"] * PASSES,
        *END, walk, *TO_THE_END,
    )
    for k in range(PASSES):
        where = rf"probe \(p=0x0, i={k}\) at .*{PROGRAM}\.c:{run.line('traced')}$"
        assert_in_order(run.cont(r, k), rf"^(?:Thread 1 .* hit )?Breakpoint 3, {where}")
    one_frame_per_pass(r, walk)
    run.ends_as_natively_at(r, PASSES + 1)


def program_result(increments: list[int]) -> tuple[str, int]:
    """What never_harm run PASSES prints and exits with when pass k adds increments[k]."""
    hits = total = 0
    for i, increment in enumerate(increments):
        hits += increment
        total += 3 * i + hits
    return f"passes={len(increments)} hits={hits} seen=0 total={total}", hits


@pytest.mark.parametrize(
    "write, increment",
    [
        pytest.param(
            "set var *(unsigned char *)($tp + 6) = 2",
            2,
            id="immediate-made-2",
            marks=pytest.mark.tpagent_only("gdbserver's jump pad runs the instruction as it was at tstart"),
        ),
        pytest.param(
            "set var *(unsigned char *)($tp + 1) = *(unsigned char *)($tp + 1)", 1, id="same-byte-rewritten"
        ),
    ],
)
def test_write_into_the_traced_instruction(e2e, write, increment):
    """At halfway(), gdb writes into the instruction under the fast tracepoint: the last
    byte, its immediate, becomes 2 (addl $2); or the second byte, under the jump, is
    written with what it holds. gdb reads back the program's instruction with the write
    (never the jump), the program runs the instruction as written from then on, and the
    tracepoint still collects every pass."""
    run = Run(e2e, "run", actions=("collect i, hits",))
    assert program_result([1] * PASSES) == (run.reference.stdout.strip(), run.reference.returncode)
    walk = run.walk("i", "hits")
    r = run.gdb(
        "x/7xb $tp", "break halfway", "break finished", "tstart", "continue", "x/7xb $tp", write, "x/7xb $tp",
        *END, walk, *TO_THE_END,
    )
    assert_in_order(run.cont(r, 0), r"Breakpoint 3, halfway \(\)")
    original = examined_bytes(r.of("x/7xb $tp"))
    assert len(original) == 7 and original[:2] == [0x83, 0x05] and original[6] == 1, r.of("x/7xb $tp")
    assert examined_bytes(r.of("x/7xb $tp", 1)) == original, r.of("x/7xb $tp", 1)
    assert examined_bytes(r.of("x/7xb $tp", 2)) == original[:6] + [increment], r.of("x/7xb $tp", 2)

    increments = [1] * HALF + [increment] * (PASSES - HALF)
    hits_before = [sum(increments[:k]) for k in range(PASSES)]
    assert_in_order(run.cont(r, 1), r"Breakpoint 4, finished \(\)")
    assert r.status().collected == PASSES, r.status()
    assert r.frames(walk) == [(k, TP, k, hits_before[k]) for k in range(PASSES)], r.of(walk)
    stdout, status = program_result(increments)
    run.exited(run.cont(r, 2), status)
    run.server.wait_for(rf"^{re.escape(stdout)}$")


# --------------------------------------------------------------------------- 5. exec


@pytest.mark.tpagent_only("gdbserver stops with an internal error when the program execs (gdb_jump_pad_buffer)")
def test_exec_another_program(e2e):
    """After its passes the traced program execs never_harm_exec_target, whose code is
    where the fast tracepoint was: the new program is left as it is (no old instruction
    written back over it, at tstop or ever), the frames collected before the exec are kept,
    and the new program runs to its own end. gdb is told of the exec (exec-events) and
    takes the new program's symbols; the frames still read back, at the old program's pc."""
    target = e2e.program(TARGET, pie=False)
    run = Run(e2e, "exec", str(target))
    direct = run.read_code("$tp", 5)
    walk = run.walk("$pc")
    r = run.gdb(
        "x/5xb $tp", "break about_to_exec", "tstart", "continue", "tstatus", "delete 3", "continue", direct,
        "tstop", "tstatus", "x/5xb $tp", direct, walk, "tfind none", "continue",
    )
    # The new program's own bytes at the tracepoint's address, read from its file.
    own = e2e.gdb(f"info symbol {run.address}", f"x/5xb {run.address}", program=target)
    assert re.fullmatch(r"count_up \+ \d+ in section \.text\n", own.of(f"info symbol {run.address}")), own.transcript
    target_bytes = examined_bytes(own.of(f"x/5xb {run.address}"))
    first_bytes = examined_bytes(r.of("x/5xb $tp"))
    assert len(target_bytes) == 5 and target_bytes != first_bytes, (first_bytes, own.transcript)

    assert_in_order(run.cont(r, 0), r"Breakpoint 3, about_to_exec \(\)")
    assert r.status().collected == PASSES, r.status()
    assert_in_order(
        run.cont(r, 1), rf"process \d+ is executing new program: {re.escape(str(target))}",
        r"Program received signal SIGUSR1",
    )
    assert r.status(1).collected == PASSES, r.status(1)
    assert examined_bytes(r.of("x/5xb $tp", 1)) == target_bytes, r.of("x/5xb $tp", 1)
    # Straight from the process, while the trace still ran and after it stopped.
    assert dumped_bytes(r.of(direct)) == target_bytes, r.of(direct)
    assert dumped_bytes(r.of(direct, 1)) == target_bytes, r.of(direct, 1)
    assert r.frames(walk) == [(k, TP, run.address) for k in range(PASSES)], r.of(walk)
    run.ends_as_natively_at(r, 2)


# --------------------------------------------------------------------------- 6. stops never show tpagent's code


# Where a thread of ftrace_busy may be seen: the program's functions, or the C library's
# thread start (never "??", a pad, or the agent library and its system calls).
PROGRAM_FRAME = r"(0x[0-9a-f]+ in )?(work|mix|worker|tick|start_thread|clone3?) \("


@pytest.mark.tpagent_only("gdbserver's pads are not shown either, but its agent cannot keep up: tested on ours")
def test_threads_stopped_in_a_pad_are_shown_in_the_program(e2e):
    """Two threads run a fast tracepoint in a tight loop while main stops at tick() again and
    again: each stop catches the workers in the pad or the collector much of the time.
    gdb must only ever see the program's own code (no "??", no frame of the agent library),
    and the program must end as natively."""
    s = FastTrace(e2e, "ftrace_busy")
    ticks = 40
    per_tick = ("continue", "info threads")
    r = s.gdb(
        *TO_MAIN, f"ftrace {s.at('busy_work')}",
        # Every hit runs the pad and the condition; few make frames, so tpagent's drain (slow
        # under ASan) never holds the workers back.
        "condition 2 round % 65536 == 0",
        "set circular-trace-buffer on", "break tick", "tstart", *per_tick * ticks,
        "tstop", "tstatus", "delete", "continue",
    )
    for k in range(ticks):
        assert_in_order(r.of("continue", k + 1), r"Thread .* hit Breakpoint 3, tick \(n=%d\)" % k)
        threads = r.of("info threads", k)
        frames = re.findall(r'^\*?\s+\d+\s+Thread \S+ "[^"]*" (.*)$', r.of("info threads", k), re.M)
        assert frames, threads
        for frame in frames:
            assert re.match(PROGRAM_FRAME, frame), threads
    assert r.status().frames > 0, r.status()
    s.exited(r.of("continue", ticks + 1), 0)
    s.prints_as_natively()
