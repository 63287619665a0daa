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

from harness import assert_in_order, hex_value, printed_value
from test_ftrace import (
    TO_MAIN,
    builds,  # noqa: F401 (the module's program builder fixture)
    exited_with,
    frames_of,
    gdb_tracing,
    native_run,
    serve_with_agent,
    walk_frames,
)
from test_ftrace_more import collected

PROGRAM = "never_harm"
TARGET = "never_harm_exec_target"
PASSES = 6
HALF = PASSES // 2
WORDS = 16
# TO_MAIN's breakpoint is gone: the tracepoint is number 2, gdb's next breakpoint 3.
TP = 2


# --------------------------------------------------------------------------- running


class Run:
    """never_harm MODE PASSES under the server with the agent preloaded, its native run for
    reference, and a tracepoint (KIND: ftrace or trace) on the traced line with ACTIONS.

    gdb's commands start with the tracepoint's definition, $tp set to its address (for the
    commands that follow) and "x/2i $tp": the traced instruction and the next one, whose
    address is where stepping over it must land."""

    def __init__(self, e2e, builds, mode: str, *extra_args: str, kind: str = "ftrace", actions=("collect i",)):
        self.e2e = e2e
        self.program = builds.path(PROGRAM)
        self.args = (mode, str(PASSES), *extra_args)
        self.reference = native_run(self.program, *self.args)
        self.server = serve_with_agent(e2e, self.program, *self.args)
        self.line = {mark: e2e.line(PROGRAM, mark) for mark in ("before", "traced", "after")}
        self.define = e2e.command_file(f"{kind} {PROGRAM}.c:{self.line['traced']}", "actions", *actions, "end")

    def gdb(self, *commands: str):
        r = gdb_tracing(
            self.e2e,
            self.server.remote,
            *TO_MAIN,
            self.define,
            f"info line {PROGRAM}.c:{self.line['traced']}",
            "set $tp = $_",
            "x/2i $tp",
            *commands,
            program=self.program,
        )
        self.address = hex_value(r.of(self.define), rf"racepoint {TP} at 0x([0-9a-f]+): file ")
        listed = re.findall(r"^(?:=> )?\s*0x([0-9a-f]+) <probe\+\d+>:\s+(\S+)", r.of("x/2i $tp"), re.M)
        assert [int(a, 16) for a, _ in listed][:1] == [self.address], r.of("x/2i $tp")
        assert listed[0][1] == "addl", r.of("x/2i $tp")
        self.next_address = int(listed[1][0], 16)
        assert self.next_address == self.address + 7, r.of("x/2i $tp")
        return r

    def trace_from_the_line_before(self) -> tuple[str, ...]:
        """Stop on the line before the traced one (that breakpoint gone), then tstart."""
        return (f"break {PROGRAM}.c:{self.line['before']}", "continue", "delete 3", "tstart")

    @staticmethod
    def cont(r, nth: int) -> str:
        """What the nth "continue" of the test's own commands printed (TO_MAIN's is not
        counted)."""
        return r.of("continue", nth + 1)

    def exits_as_natively(self, r, nth: int) -> None:
        """The nth continue ran the program to its end, which was the native run's."""
        exited_with(self.cont(r, nth), self.server.inferior_pid, self.reference.returncode)
        for line in self.reference.stdout.splitlines():
            self.server.wait_for(rf"^{re.escape(line)}$")


# The end of every run: the trace stopped at finished(), its frames read, the program run
# on to its end.
END = ("continue", "tstop", "tstatus")
TO_THE_END = ("tfind none", "delete", "continue")


def one_frame_per_pass(r, walk: str) -> None:
    """PASSES frames, the kth from pass k, in order."""
    assert_in_order(Run.cont(r, end_continue(r)), r"Breakpoint \d+, finished \(\)")
    last = r.commands.count("tstatus") - 1
    assert collected(r.of("tstatus", last)) == PASSES, r.of("tstatus", last)
    assert frames_of(r.of(walk)) == [(k, TP, k) for k in range(PASSES)], r.of(walk)


def end_continue(r) -> int:
    """Which of the test's continues (as Run.cont counts them) is END's: the last before
    tstop."""
    stop = r.commands.index("tstop")
    return sum(1 for c in r.commands[:stop] if c == "continue") - 2


def step_to_traced_instruction(e2e) -> str:
    """stepi until the pc is at the tracepoint (from a line before it, in its function)."""
    return e2e.command_file("while $pc != $tp", "  stepi", "end")


def program_bytes_command(pid: int, count: int) -> str:
    """A shell command printing COUNT bytes at $tp straight from /proc/PID/mem: what the
    program runs, whatever the server shows gdb."""
    return f'eval "shell dd if=/proc/{pid}/mem bs=1 skip=%lu count={count} status=none | od -An -tx1", $tp'


def bytes_of(text: str) -> list[int]:
    """The bytes an x/Nxb printed."""
    return [int(b, 16) for b in re.findall(r"\b0x([0-9a-f]{2})\b", text)]


# --------------------------------------------------------------------------- 1. memory that goes away


def memory_walk(e2e) -> str:
    """Every frame: "frame N tp T: i", then p[0]@16 on a line of its own."""
    return e2e.command_file(
        "tfind start",
        "while $trace_frame != -1",
        '  printf "frame %d tp %d: %ld\\n", $trace_frame, $tracepoint, i',
        "  output p[0]@16",
        "  echo \\n",
        "  tfind",
        "end",
    )


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
def test_collecting_through_memory_that_goes_away(e2e, builds, mode, kind):
    """collect p[0]@16 where p points into a page the program unmaps (or makes
    inaccessible, PROT_NONE) before pass 3: the tracepoint goes on collecting every pass
    without harming the program. The frames from before hold the page's words; those from
    after have none, except where a trap tracepoint's server reads a PROT_NONE page as
    gdb's own reads do (ptrace and /proc/PID/mem may), which still holds what pass 2 left.
    A fast tracepoint collects in the program itself, where a PROT_NONE page cannot be
    read."""
    run = Run(e2e, builds, mode, kind=kind, actions=("collect i, p[0]@16",))
    walk = memory_walk(e2e)
    # The trace starts while the page is there (at ready(), before the first pass).
    r = run.gdb("break ready", "continue", "break finished", "tstart", *END, walk, *TO_THE_END)
    assert "SIGSEGV" not in r.output and "SIGBUS" not in r.output, r.transcript
    assert_in_order(run.cont(r, 0), r"Breakpoint 3, ready \(\)")
    assert_in_order(run.cont(r, 1), r"Breakpoint 4, finished \(\)")
    assert collected(r.of("tstatus")) == PASSES, r.of("tstatus")
    rows = re.findall(r"^frame (\d+) tp (\d+): (\d+)\n(.*)$", r.of(walk), re.M)
    assert [tuple(map(int, row[:3])) for row in rows] == [(k, TP, k) for k in range(PASSES)], r.of(walk)
    there = [page_words(k) for k in range(HALF)]
    readable_by_the_server = kind == "trace" and mode == "protect"
    gone = [page_words(HALF - 1) if readable_by_the_server else "<unavailable>"] * (PASSES - HALF)
    assert [row[3] for row in rows] == there + gone, r.of(walk)
    run.exits_as_natively(r, 2)


# --------------------------------------------------------------------------- 2. stepping over a fast tracepoint


def test_stepi_over_a_fast_tracepoint(e2e, builds):
    """From the line before the fast tracepoint, stepi up to it and once more: the step
    executes the traced instruction (the program's, not a jump pad's) and stops at the
    program's next instruction, collecting that pass once; later passes are traced as
    usual."""
    run = Run(e2e, builds, "run")
    step = step_to_traced_instruction(e2e)
    walk = walk_frames(e2e, "i")
    r = run.gdb(
        *run.trace_from_the_line_before(),
        step,
        "print/x $pc",
        "stepi",
        "print/x $pc",
        "x/i $pc",
        "info symbol $pc",
        "print hits",
        "tstatus",
        "break finished",
        *END,
        walk,
        *TO_THE_END,
    )
    assert printed_value(r.of("print/x $pc")) == f"0x{run.address:x}"
    assert printed_value(r.of("print/x $pc", 1)) == f"0x{run.next_address:x}", r.transcript
    assert r.of("stepi").startswith(f"{run.line['after']}\t"), r.of("stepi")
    assert_in_order(r.of("x/i $pc"), rf"^=> 0x{run.next_address:x} <probe\+\d+>:\s+mov\s")
    symbol = r.of("info symbol $pc")
    assert re.fullmatch(r"probe \+ \d+ in section \.text( of .*)?\n", symbol), symbol
    assert printed_value(r.of("print hits")) == "1"
    assert collected(r.of("tstatus")) == 1, r.of("tstatus")  # the step's pass, once
    one_frame_per_pass(r, walk)
    run.exits_as_natively(r, 2)


def test_next_over_a_fast_tracepoint(e2e, builds):
    """From the line before the fast tracepoint, next, next: the second steps over the
    traced line to the one after it, in the program's function, collecting that pass once."""
    run = Run(e2e, builds, "run")
    walk = walk_frames(e2e, "i")
    r = run.gdb(
        *run.trace_from_the_line_before(),
        "next",
        "next",
        "print/x $pc",
        "print hits",
        "tstatus",
        "break finished",
        *END,
        walk,
        *TO_THE_END,
    )
    assert r.of("next").startswith(f"{run.line['traced']}\t"), r.of("next")
    assert "Cannot find bounds" not in r.output, r.of("next", 1)
    assert r.of("next", 1).startswith(f"{run.line['after']}\t"), r.of("next", 1)
    assert printed_value(r.of("print/x $pc")) == f"0x{run.next_address:x}"
    assert printed_value(r.of("print hits")) == "1"
    assert collected(r.of("tstatus")) == 1, r.of("tstatus")  # the step's pass, once
    one_frame_per_pass(r, walk)
    run.exits_as_natively(r, 2)


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
    before = f"break {PROGRAM}.c:{run.line['before']}"
    if how == "next":
        per_pass = ["continue", "next", "next"]
    else:
        per_pass = ["continue", step_to_traced_instruction(e2e), "stepi", "stepi"]
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
def test_one_frame_per_pass_however_gdb_goes_through(e2e, builds, kind, how):
    """Every pass over the tracepoint makes one frame, whether the program runs through it
    or gdb steps through it (next, stepi, or single-stepping for a software watchpoint),
    and the program runs as natively."""
    run = Run(e2e, builds, "run", kind=kind)
    walk = walk_frames(e2e, "i")
    passes = through_each_pass(e2e, run, how)
    r = run.gdb("tstart", *passes, "break finished", *END, walk, *TO_THE_END)
    if how == "next":
        for k in range(PASSES):
            assert r.of("next", 2 * k + 1).startswith(f"{run.line['after']}\t"), r.of("next", 2 * k + 1)
    if how == "stepi":
        for k in range(PASSES):
            assert r.of("stepi", 2 * k).startswith(f"{run.line['after']}\t"), r.of("stepi", 2 * k)
    if how == "watch":
        for k in range(PASSES):
            assert_in_order(
                run.cont(r, k),
                r"\bWatchpoint 3: watched$",
                rf"^Old value = {k}$",
                rf"^New value = {k + 1}$",
            )
    one_frame_per_pass(r, walk)
    run.exits_as_natively(r, end_continue(r) + 1)


# --------------------------------------------------------------------------- 4. a breakpoint on it, writes into it


@pytest.mark.parametrize(
    "always_inserted, when",
    [("off", "before-tstart"), ("on", "before-tstart"), ("on", "after-tstart")],
)
def test_breakpoint_at_a_fast_tracepoint(e2e, builds, always_inserted, when):
    """break *ADDRESS on the fast tracepoint's address: each continue stops there once per
    pass, and each pass still makes one frame. With always-inserted off gdb inserts the
    breakpoint when it resumes, after tstart either way; with it on, when it is set."""
    run = Run(e2e, builds, "run")
    walk = walk_frames(e2e, "i")
    start = ["tstart", "break *$tp"] if when == "after-tstart" else ["break *$tp", "tstart"]
    r = run.gdb(
        f"set breakpoint always-inserted {always_inserted}",
        *start,
        "break finished",
        *["continue"] * PASSES,
        *END,
        walk,
        *TO_THE_END,
    )
    for k in range(PASSES):
        where = rf"probe \(p=0x0, i={k}\) at .*{PROGRAM}\.c:{run.line['traced']}$"
        assert_in_order(run.cont(r, k), rf"^(?:Thread 1 .* hit )?Breakpoint 3, {where}")
    one_frame_per_pass(r, walk)
    run.exits_as_natively(r, PASSES + 1)


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
def test_write_into_the_traced_instruction(e2e, builds, write, increment):
    """At halfway(), gdb writes into the instruction under the fast tracepoint: the last
    byte, its immediate, becomes 2 (addl $2); or the second byte, under the jump, is
    written with what it holds. gdb reads back the program's instruction with the write
    (never the jump), the program runs the instruction as written from then on, and the
    tracepoint still collects every pass."""
    run = Run(e2e, builds, "run", actions=("collect i, hits",))
    assert program_result([1] * PASSES) == (run.reference.stdout.strip(), run.reference.returncode)
    walk = walk_frames(e2e, "i", "hits")
    r = run.gdb(
        "x/7xb $tp",
        "break halfway",
        "break finished",
        "tstart",
        "continue",
        "x/7xb $tp",
        write,
        "x/7xb $tp",
        *END,
        walk,
        *TO_THE_END,
    )
    assert_in_order(run.cont(r, 0), r"Breakpoint 3, halfway \(\)")
    original = bytes_of(r.of("x/7xb $tp"))
    assert len(original) == 7 and original[:2] == [0x83, 0x05] and original[6] == 1, r.of("x/7xb $tp")
    assert bytes_of(r.of("x/7xb $tp", 1)) == original, r.of("x/7xb $tp", 1)
    assert bytes_of(r.of("x/7xb $tp", 2)) == original[:6] + [increment], r.of("x/7xb $tp", 2)

    increments = [1] * HALF + [increment] * (PASSES - HALF)
    hits_before = [sum(increments[:k]) for k in range(PASSES)]
    assert_in_order(run.cont(r, 1), r"Breakpoint 4, finished \(\)")
    assert collected(r.of("tstatus")) == PASSES, r.of("tstatus")
    assert frames_of(r.of(walk)) == [(k, TP, k, hits_before[k]) for k in range(PASSES)], r.of(walk)
    stdout, status = program_result(increments)
    exited_with(run.cont(r, 2), run.server.inferior_pid, status)
    run.server.wait_for(rf"^{re.escape(stdout)}$")


# --------------------------------------------------------------------------- 5. exec


@pytest.mark.tpagent_only("gdbserver stops with an internal error when the program execs (gdb_jump_pad_buffer)")
def test_exec_another_program(e2e, builds):
    """After its passes the traced program execs never_harm_exec_target, whose code is
    where the fast tracepoint was: the new program is left as it is (no old instruction
    written back over it, at tstop or ever), the frames collected before the exec are kept,
    and the new program runs to its own end."""
    target = builds.path(TARGET)
    run = Run(e2e, builds, "exec", str(target))
    pid = run.server.inferior_pid
    direct = program_bytes_command(pid, 5)
    walk = walk_frames(e2e, "i")
    r = run.gdb(
        "x/5xb $tp",
        "break about_to_exec",
        "tstart",
        "continue",
        "tstatus",
        "delete 3",
        "continue",
        direct,
        "tstop",
        "tstatus",
        "x/5xb $tp",
        direct,
        walk,
        "tfind none",
        "continue",
    )
    # The new program's own bytes at the tracepoint's address, read from its file.
    own = e2e.gdb(f"info symbol {run.address}", f"x/5xb {run.address}", program=target)
    assert re.fullmatch(r"count_up \+ \d+ in section \.text\n", own.of(f"info symbol {run.address}")), own.transcript
    target_bytes = bytes_of(own.of(f"x/5xb {run.address}"))
    first_bytes = bytes_of(r.of("x/5xb $tp"))
    assert len(target_bytes) == 5 and target_bytes != first_bytes, (first_bytes, own.transcript)

    assert_in_order(run.cont(r, 0), r"Breakpoint 3, about_to_exec \(\)")
    assert collected(r.of("tstatus")) == PASSES, r.of("tstatus")
    assert_in_order(run.cont(r, 1), r"Program received signal SIGUSR1")
    assert collected(r.of("tstatus", 1)) == PASSES, r.of("tstatus", 1)
    assert bytes_of(r.of("x/5xb $tp", 1)) == target_bytes, r.of("x/5xb $tp", 1)
    # Straight from the process, while the trace still ran and after it stopped.
    assert [int(b, 16) for b in r.of(direct).split()] == target_bytes, r.of(direct)
    assert [int(b, 16) for b in r.of(direct, 1).split()] == target_bytes, r.of(direct, 1)
    # gdb, not told about the exec, still has the first program's symbols for the frames.
    assert frames_of(r.of(walk)) == [(k, TP, k) for k in range(PASSES)], r.of(walk)
    run.exits_as_natively(r, 2)


# --------------------------------------------------------------------------- 6. stops never show tpagent's code


# Where a thread of ftrace_busy may be seen: the program's functions, or the C library's
# thread start (never "??", a pad, or the agent library and its system calls).
PROGRAM_FRAME = r"(0x[0-9a-f]+ in )?(work|mix|worker|tick|start_thread|clone3?) \("


@pytest.mark.tpagent_only("gdbserver's pads are not shown either, but its agent cannot keep up: tested on ours")
def test_threads_stopped_in_a_pad_are_shown_in_the_program(e2e, builds):
    """Two threads run a fast tracepoint in a tight loop while main stops at tick() again and
    again: each stop catches the workers in the pad or the collector much of the time.
    gdb must only ever see the program's own code (no "??", no frame of the agent library),
    and the program must end as natively."""
    program = builds.path("ftrace_busy")
    reference = native_run(program)
    server = serve_with_agent(e2e, program)
    ticks = 40
    per_tick = ("continue", "info threads")
    r = gdb_tracing(
        e2e,
        server.remote,
        *TO_MAIN,
        f"ftrace ftrace_busy.c:{e2e.line('ftrace_busy', 'busy_work')}",
        # Every hit runs the pad and the condition; few make frames, so tpagent's drain (slow
        # under ASan) never holds the workers back.
        "condition 2 round % 65536 == 0",
        "set circular-trace-buffer on",
        "break tick",
        "tstart",
        *per_tick * ticks,
        "tstop",
        "tstatus",
        "delete",
        "continue",
        program=program,
    )
    for k in range(ticks):
        assert_in_order(r.of("continue", k + 1), r"Thread .* hit Breakpoint 3, tick \(n=%d\)" % k)
        threads = r.of("info threads", k)
        frames = re.findall(r'^\*?\s+\d+\s+Thread \S+ "[^"]*" (.*)$', r.of("info threads", k), re.M)
        assert frames, threads
        for frame in frames:
            assert re.match(PROGRAM_FRAME, frame), threads
    assert re.search(r"^(Collected|Buffer contains) [1-9]\d* trace frames", r.of("tstatus"), re.M), r.of("tstatus")
    exited_with(r.of("continue", ticks + 1), server.inferior_pid, 0)
    for line in reference.stdout.splitlines():
        server.wait_for(rf"^{re.escape(line)}$")
