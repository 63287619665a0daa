"""Scenarios both suites run: tests/e2e (x86-64, the local server) and tests/arm64 (the
emulated board, each stub). A function here takes the test's Scenario (a scenario.Scenario
or board.BoardScenario: which program, under which server), and an `Arch` where the
machine shows (register names, where a trap stops); it runs the gdb commands and makes
every check, and gives back the `Result` for a suite's own further checks.

traced.c's record_hit(iteration, 3) runs once per iteration, then other_hit(iteration),
halfway() after record_hit(5); traced_threads.c's four threads call work(id, round) for
rounds 0..4; basic.c writes `watched` three times and returns exit_code (3). gdb runs the
program to main first, so tracepoints are numbered from 2.
"""

from __future__ import annotations

import re
import time
from dataclasses import dataclass
from pathlib import Path

from harness import WAIT_TIMEOUT, DISCONNECTED, assert_in_order, hex_value
from scenario import TO_MAIN, TO_THE_END, Result, Scenario, ftrace, trace, trace_to, tracepoint_address, while_stepping


def tracer(fast: bool):
    """scenario.ftrace or scenario.trace: the helpers below define either kind."""
    return ftrace if fast else trace


def kind_name(fast: bool, capital: bool = False) -> str:
    """How gdb names a tracepoint of that kind ("fast tracepoint", "Tracepoint")."""
    name = "fast tracepoint" if fast else "tracepoint"
    return name[0].upper() + name[1:] if capital else name


@dataclass(frozen=True)
class Arch:
    """What a scenario needs of the machine."""

    # The pc's register name ($pc itself is a user register gdb cannot collect on x86-64).
    pc: str
    # tdump's lines for record_hit(I, 3)'s argument registers ($regs), before the pc: each
    # formatted with i=I.
    hit_arguments: tuple[str, ...]
    # tdump's lines after the pc there (e.g. the flags).
    after_pc: tuple[str, ...] = ()
    # Fixed-size instructions: while-stepping's steps are this many bytes apart.
    instruction_size: int | None = None
    # A data trap may stop mid-line (gdb then prints "0xADDR LINE ...").
    mid_line_traps: bool = False
    # The registers of a function's first two integer arguments.
    argument_registers: tuple[str, str] = ("rdi", "rsi")

    def arguments(self, iteration: int) -> list[str]:
        """tdump's lines for record_hit(ITERATION, 3)'s argument registers."""
        return [line.format(i=iteration) for line in self.hit_arguments]


X86_64 = Arch(pc="rip", hit_arguments=(r"^rsi\s+0x3\s+3$",))  # scale, the second argument
AARCH64 = Arch(
    pc="pc",
    hit_arguments=(r"^x0\s+0x{i:x}\s+{i}$", r"^x1\s+0x3\s+3$"),  # iteration and scale, still in their registers
    after_pc=(r"^cpsr\s+0x[0-9a-f]+\s+\[ ",),
    instruction_size=4,
    mid_line_traps=True,
    argument_registers=("x0", "x1"),
)

PROGRAM = "traced"
# table[1..3] collected, not the others: how gdb prints the others.
UNAVAILABLE = ", ".join(["<unavailable>"] * 4)
THREADS, ROUNDS = 4, 5


# --------------------------------------------------------------------------- collecting


def record_hit_traces(s: Scenario) -> tuple[tuple[str, ...], ...]:
    """Tracepoints collecting $regs and $args at record_hit; at its return line $locals,
    globals, a struct, an array slice, *pointer, a string and an expression."""
    return (
        trace("record_hit", "collect $regs", "collect $args"),
        trace(
            s.at("record_return"),
            "collect $locals",
            "collect counter, current, table[1]@3, *cursor, *greeting@5",
            "collect iteration * 100 + scale",
        ),
    )


def collect_and_find_frames(s: Scenario, arch: Arch, *in_frame_0: str) -> Result:
    """traced.c 4 with record_hit_traces() and other_hit's iteration: every value in frames
    0 and 7, then every tfind form walks the 12 frames. IN_FRAME_0: more commands there."""
    record_return = s.line("record_return")
    define = s.define(*record_hit_traces(s), trace("other_hit", "collect iteration"))
    r = s.gdb(
        *TO_MAIN, define, *trace_to("finished"),
        # Frame 0: tracepoint 2, iteration 0.
        "tfind start", "tdump", "print iteration", "print untouched", "print $trace_frame", "print $tracepoint",
        f"info registers {arch.pc}", *in_frame_0,
        # Frames go 2, 3, 4 per iteration: frame 7 is tracepoint 3 in iteration 2.
        "tfind", "tfind 7", "tdump", "print table", "print current.total", "tfind tracepoint 2", "print iteration",
        # "info tracepoints N" leaves N's address in $_.
        "info tracepoints 4", "tfind pc $_", "print iteration",
        "tfind start", "tfind range other_hit, stepped", "tfind outside record_hit, other_hit",
        f"tfind line {record_return}", "print iteration",
        "tfind end", "print $trace_frame", "print counter",
    )
    tp2 = tracepoint_address(r.of(define), 2, source=PROGRAM)
    tp4 = tracepoint_address(r.of(define), 4, source=PROGRAM)
    tracepoint_address(r.of(define), 3, source=PROGRAM, line=record_return)

    r.stopped_at(1, r"Breakpoint 5, finished \(result=\d+\)")
    r.trace_stopped("by a tstop command", 12)

    assert r.found("tfind start") == (0, 2)
    pc_line = rf"^{arch.pc}\s+0x{tp2:x}\s+0x{tp2:x} <record_hit\+\d+>$"
    r.dumped(2, 0, *arch.arguments(0), pc_line, *arch.after_pc, r"^iteration = 0$", r"^scale = 3$")
    assert r.value("print iteration") == "0"
    assert r.value("print untouched") == "<unavailable>"
    assert r.value("print $trace_frame") == "0"
    assert r.value("print $tracepoint") == "2"
    assert hex_value(r.of(f"info registers {arch.pc}"), rf"(?m)^{arch.pc}\s+0x([0-9a-f]+)\s") == tp2

    assert r.found("tfind") == (1, 3)
    assert r.found("tfind 7") == (7, 3)
    r.dumped(
        3, 7,
        r"^squared = 4$",
        r"^scaled = 12$",
        r"^counter = 3$",
        r'^current = \{id = 2, kind = 5, total = 15, label = "first\\000\\000"\}$',
        r"^table\[1\]@3 = \{11, 12, 13\}$",
        r"^\*cursor = 12$",
        r'^\*greeting@5 = "hello"$',
        r"^iteration \* 100 \+ scale = 203$",
        nth=1,
    )
    # Only table[1..3] were collected (*cursor is table[2]).
    assert r.value("print table") == f"{{<unavailable>, 11, 12, 13, {UNAVAILABLE}}}"
    assert r.value("print current.total") == "15"

    assert r.found("tfind tracepoint 2") == (9, 2)
    assert r.value("print iteration", 1) == "3"
    assert hex_value(r.of("info tracepoints 4"), r"(?m)^4\s+tracepoint\s+keep y\s+0x([0-9a-f]+) in other_hit") == tp4
    assert r.found("tfind pc $_") == (11, 4)
    assert r.value("print iteration", 2) == "3"

    assert r.found("tfind range other_hit, stepped") == (2, 4)
    assert r.found("tfind outside record_hit, other_hit") == (5, 4)
    assert r.found(f"tfind line {record_return}") == (7, 3)
    assert r.value("print iteration", 3) == "2"

    assert r.of("tfind end").strip() == "No longer looking at any trace frame"
    assert r.value("print $trace_frame", 1) == "-1"
    # Live memory again: the program finished all 4 iterations.
    assert r.value("print counter") == "4"
    return r


def while_stepping_frames(s: Scenario, arch: Arch) -> Result:
    """traced.c 2, while-stepping 3 at stepped(): three frames per hit, at the next three
    instructions, each holding only the pc."""
    pc = arch.pc
    define = s.define(trace("stepped", "collect x", while_stepping(3, f"collect ${pc}")))
    r = s.gdb(
        *TO_MAIN, define, *trace_to("finished"),
        "info tracepoints 2",  # leaves the tracepoint's address in $_
        "x/4i $_",  # the tracepoint's instruction and the three stepped through
        "tfind start", "print x", f"print/x ${pc}",
        "tfind", "tdump", "print x",
        "tfind", f"print/x ${pc}", "tfind", f"print/x ${pc}",
        "tfind", "tdump", "tfind 7", f"print/x ${pc}", "tfind",
    )
    tp = tracepoint_address(r.of(define), 2, source=PROGRAM)
    # 2 hits, each 1 + 3 frames.
    assert r.status().collected == 8, r.status()
    pcs = [int(a, 16) for a in re.findall(r"^(?:=> )?\s*0x([0-9a-f]+) <stepped\+\d+>:", r.of("x/4i $_"), re.M)]
    assert len(pcs) == 4 and pcs[0] == tp, r.of("x/4i $_")
    if arch.instruction_size:
        # Straight-line code: each instruction the size after the previous.
        assert pcs == [tp + k * arch.instruction_size for k in range(4)], r.of("x/4i $_")

    assert r.value("print x") == "0"
    assert r.value(f"print/x ${pc}") == f"0x{tp:x}"
    assert r.found("tfind") == (1, 2)
    # A stepping frame holds what the while-stepping list collected, nothing else.
    r.dumped(2, 1, rf"^\${pc} = .*0x{pcs[1]:x} ")
    assert r.value("print x", 1) == "<unavailable>"
    assert r.value(f"print/x ${pc}", 1) == f"0x{pcs[2]:x}"
    assert r.value(f"print/x ${pc}", 2) == f"0x{pcs[3]:x}"
    # The second hit: the tracepoint's own collection again, then its steps.
    r.dumped(2, 4, r"^x = 1$", nth=1)
    assert r.value(f"print/x ${pc}", 3) == f"0x{pcs[3]:x}"
    assert r.found("tfind", 4) is None
    return r


def hits_define(s: Scenario, registers: bool = False, fast: bool = False) -> str:
    """The definition a trace file holds: $hits counted from 100 at record_hit's first line,
    collecting iteration, a struct, an array slice ($regs too with REGISTERS) and $hits. The
    tracepoint (a fast one with FAST) is set by line so that the file's tracepoint resolves
    to the same address without a live process."""
    collect = f"collect {'$regs, ' if registers else ''}iteration, current, table[1]@3"
    return s.define(
        "tvariable $hits = 100",
        tracer(fast)(s.at("record_first"), collect, "teval $hits = $hits + 1", "collect $hits"),
    )


def tsave_and_tfile(s: Scenario, trace_file: Path, registers: Arch | None = None) -> Result:
    """traced.c 6: tsave pulls the buffer into TRACE_FILE; a new gdb reads it with target
    tfile (the symbols loaded at the run's load offset). With REGISTERS, $regs is collected
    too: record_hit(4, 3)'s arguments, and the live frame's pc and sp, are in the file."""
    define = hits_define(s, registers=registers is not None)
    frame = ("tfind 4", f"print/x ${registers.pc}", "print $sp", "tfind none") if registers else ()
    live = s.trace_and_save(define, *frame, f"tsave {trace_file}", anchor="record_hit")
    # (gdb -batch says nothing on success.)
    assert live.of(f"tsave {trace_file}").strip() == ""
    assert trace_file.read_bytes().startswith(b"\x7fTRACE0\n")

    shown = (f"print/x ${registers.pc}", "print $sp") if registers else ()
    r = s.open_trace_file(
        trace_file,
        "tstatus", "info tvariables", "tfind 4", "tdump", *shown, "print untouched", "print table", "tfind", "tfind",
        live=live,
    )
    assert_in_order(
        r.of(f"target tfile {trace_file}"),
        r"Created tracepoint 1 for target's tracepoint 2 at 0x[0-9a-f]+\.",
    )
    status = r.status()
    assert (status.file, status.stopped, status.collected) == (True, "by a tstop command", 6), status
    assert re.search(r"^\$hits\s+100\s", r.of("info tvariables"), re.M), r.of("info tvariables")
    assert r.found("tfind 4") == (4, 1)
    r.dump().shows(
        *(registers.arguments(4) if registers else ()),
        r"^iteration = 4$",
        r'^current = \{id = 3, kind = 5, total = 42, label = "first\\000\\000"\}$',
        r"^table\[1\]@3 = \{11, 12, 13\}$",
        r"^\$hits = 105$",
    )
    # The registers in the file are the live frame's.
    for command in shown:
        assert r.value(command) == live.value(command)
    assert r.value("print untouched") == "<unavailable>"
    assert r.value("print table") == f"{{<unavailable>, 11, 12, 13, {UNAVAILABLE}}}"
    assert [r.found("tfind", n) for n in range(2)] == [(5, 1), None]
    return r


def concurrent_hits(s: Scenario, register: str) -> Result:
    """traced_threads.c: four threads hit one tracepoint at the same time; every hit makes
    a frame, and each frame holds the REGISTER of the thread that hit it, one value per
    thread and a different one for each (its thread pointer, or its stack pointer at the
    same call depth every round)."""
    define = s.define(trace("work", f"collect id, round, {register}"))
    walk = s.walk("id", "round", register)
    r = s.gdb(*TO_MAIN, define, *trace_to("all_done"), walk)
    r.stopped_at(1, r"Breakpoint 3, all_done \(\)")
    assert r.status().collected == THREADS * ROUNDS, r.status()
    rows = [(frame, tid, rnd, value) for frame, _, tid, rnd, value in r.frames(walk)]
    assert [row[0] for row in rows] == list(range(THREADS * ROUNDS)), r.of(walk)
    # Each thread's rounds appear once each, in order (frames are in hit order).
    for tid in range(THREADS):
        assert [rnd for _, t, rnd, _ in rows if t == tid] == list(range(ROUNDS)), (tid, rows)
    values = {tid: {value for _, t, _, value in rows if t == tid} for tid in range(THREADS)}
    assert all(len(v) == 1 for v in values.values()), values
    assert len(set.union(*values.values())) == THREADS, values
    return r


# --------------------------------------------------------------------------- what decides a collection


def tracepoints_and_hits(r: Result, walk: str) -> list[tuple[int, int]]:
    """The walk's rows as (tracepoint, iteration)."""
    return [row[1:] for row in r.frames(walk)]


def conditions(s: Scenario) -> Result:
    """condition N expr and trace ... if expr: only hits where it holds make frames. Its
    run ends with info tracepoints (after the walk) for the hit counts."""
    define = s.define(
        trace("record_hit", "collect iteration"),
        "condition 2 iteration % 3 == 0",
        trace("other_hit if iteration > 7", "collect iteration"),
    )
    walk = s.walk("iteration")
    r = s.gdb(*TO_MAIN, define, *trace_to("finished"), "info tracepoints", walk)
    assert r.status().collected == 6, r.status()
    assert tracepoints_and_hits(r, walk) == [(2, 0), (2, 3), (2, 6), (3, 8), (2, 9), (3, 9)]
    return r


def conditions_counted(r: Result, *other_hit: str) -> None:
    """info tracepoints (of a conditions() definition): hits count only the hits whose
    condition held, 4 of record_hit's; then tracepoint 3 at other_hit, with OTHER_HIT."""
    assert_in_order(
        r.of("info tracepoints"),
        r"^2\s+tracepoint\s+keep y .* in record_hit ",
        r"^\s+trace only if iteration % 3 == 0$",
        r"^\s+tracepoint already hit 4 times$",
        r"^3\s+tracepoint\s+keep y .* in other_hit ",
        *other_hit,
    )


def passcount_stops_the_trace(s: Scenario) -> Result:
    """passcount 3: the third hit of tracepoint 2 is collected, then the trace stops."""
    define = s.define(
        trace("record_hit", "collect iteration"), "passcount 3 2", trace("other_hit", "collect iteration")
    )
    walk = s.walk("iteration")
    r = s.gdb(*TO_MAIN, define, *trace_to("finished", tstop=False), "info tracepoints", walk, "tstop")
    r.trace_stopped("by tracepoint 2", 5)
    assert_in_order(r.of("info tracepoints"), r"^\s+tracepoint already hit 3 times$", r"^\s+pass count 3 ?$")
    assert tracepoints_and_hits(r, walk) == [(2, 0), (3, 0), (2, 1), (3, 1), (2, 2)]
    assert r.of("tstop").strip() == "Trace is not running."
    return r


def disable_enable_and_add_during_the_run(s: Scenario, fast: bool = False) -> Result:
    """disable/enable act at once (QTDisable/QTEnable); a tracepoint set during the run is
    installed at once. Its actions come from default-collect: an actions list typed after
    the tracepoint exists is not sent until the next tstart. FAST: fast tracepoints."""
    define = s.define(tracer(fast)("record_hit", "collect iteration"))
    walk = s.walk("iteration")
    r = s.gdb(
        *TO_MAIN, define, "break halfway", "break stepped if x == 7", "break finished", "tstart",
        "continue",  # to halfway: record_hit 0..5 traced
        "disable 2", "set default-collect iteration", f"{'ftrace' if fast else 'trace'} other_hit",
        "continue",  # to stepped(7): other_hit 5..7 traced
        "enable 2",
        "continue",  # to finished: record_hit and other_hit 8, 9
        "tstop", "tstatus", walk,
    )
    r.stopped_at(1, r"Breakpoint 3, halfway \(\)")
    added = r.of(f"{'ftrace' if fast else 'trace'} other_hit")
    assert_in_order(added, rf"^{kind_name(fast, True)} 6 at 0x[0-9a-f]+: file .*traced\.c, line \d+\.$")
    r.stopped_at(2, r"Breakpoint 4, stepped \(x=7\)")
    assert r.status().collected == 13, r.status()
    expected = [(2, i) for i in range(6)] + [(6, 5), (6, 6), (6, 7), (2, 8), (6, 8), (2, 9), (6, 9)]
    assert tracepoints_and_hits(r, walk) == expected
    return r


def trace_state_variables(s: Scenario) -> Result:
    """teval updates target-side variables; tstatus/info tvariables show their current
    values, frames hold the collected ones; $trace_timestamp is offered by the target:
    wall-clock microseconds, the clock of tstatus's start time, with either stub."""
    define = s.define(
        "tvariable $count = 10",
        "tvariable $last",
        trace(
            "record_hit",
            "teval $count = $count + 1, $last = iteration * 7",
            "collect $count, $last, $trace_timestamp",
        ),
    )
    r = s.gdb(
        *TO_MAIN, "info tvariables", define, "break halfway", "break finished", "tstart",
        "continue",  # to halfway: 6 hits
        "info tvariables", "print $count", "continue", "tstop", "tstatus", "info tvariables",
        "tfind 1", "tdump", "print $trace_timestamp", "tfind 2", "print $trace_timestamp",
        "tfind 9", "print $count", "tfind none", "print $last",
    )
    # The target's own variable, uploaded when gdb connects.
    assert re.search(r"^\$trace_timestamp\s+0\s", r.of("info tvariables"), re.M), r
    assert_in_order(
        r.of(define),
        r"^Trace state variable \$count created, with initial value 10\.$",
        r"^Trace state variable \$last created, with initial value 0\.$",
    )
    assert_in_order(r.of("info tvariables", 1), r"^\$count\s+10\s+16\s*$", r"^\$last\s+0\s+35\s*$")
    assert r.value("print $count") == "16"
    assert_in_order(r.of("info tvariables", 2), r"^\$count\s+10\s+20\s*$", r"^\$last\s+0\s+63\s*$")
    r.dumped(2, 1, r"^\$count = 12$", r"^\$last = 7$", r"^\$trace_timestamp = \d+$")
    stamps = [int(r.value("print $trace_timestamp", n)) for n in (0, 1)]
    assert stamps[0] < stamps[1], stamps
    start, duration = map(
        float, re.search(r"Trace started at ([\d.]+) secs, stopped ([\d.]+) secs later", r.of("tstatus")).groups()
    )
    seconds = [stamp / 1e6 for stamp in stamps]
    assert start - 0.001 <= seconds[0] <= seconds[1] <= start + duration + 0.001, (start, duration, stamps)
    assert r.value("print $count", 1) == "20"
    assert r.value("print $last") == "63"
    return r


# --------------------------------------------------------------------------- beyond one gdb session
# S: traced.c with 0 counted iterations and a stop file: it loops (10 ms a round, "tick N"
# printed every 10 rounds) until STOP, a gdb command, creates the file. TICK_TIMEOUT: how
# long a tick may take.


def trace_runs_on_after_detach(
    s: Scenario, stop: str, tick_timeout: float = WAIT_TIMEOUT, fast: bool = False
) -> Result:
    """gdb starts the trace and detaches; the program runs on, unwatched, hitting the
    tracepoint (a fast one with FAST); a second gdb finds the trace running, stops it and
    reads its frames."""
    define = s.define(tracer(fast)("record_hit", "collect iteration"))
    first = s.gdb(*TO_MAIN, define, "set disconnected-tracing on", "tstart", "detach")
    assert_in_order(first.of("detach"), rf"^\[Inferior 1 \(process {s.pid}\) detached\]$")

    # 40 rounds pass with no gdb at all.
    s.server.wait_for(r"^tick 40$", timeout=tick_timeout)
    r = s.gdb(
        "tstatus", "info tracepoints", "tstop", "tstatus",
        "tfind start", "tdump", "tfind 30", "print iteration", "tfind none", stop, "continue",
    )
    # Connecting, gdb learns of the running trace and takes over the target's tracepoint.
    assert_in_order(
        r.of(s.connect),
        r"^Trace is already running on the target\.$",
        r"^Created tracepoint 1 for target's tracepoint 2 at 0x[0-9a-f]+\.$",
    )
    running = r.status()
    assert (running.running, running.on_disconnect) == (True, "continue"), running
    assert running.collected >= 40
    assert_in_order(
        r.of("info tracepoints"),
        rf"^1\s+{kind_name(fast)}\s+keep y\s+0x[0-9a-f]+ in record_hit at .*traced\.c:\d+$",
        r"^\s+collect iteration$",
        r"^\s+installed on target$",
    )
    assert r.status(1).stopped == "by a tstop command", r.status(1)
    r.dumped(1, 0, r"^iteration = 0$")
    assert r.found("tfind 30") == (30, 1)
    assert r.value("print iteration") == "30"
    # The trace is stopped and the program, still whole, runs to its end.
    s.exited(r.of("continue"), 0)
    return r


def disconnect_stops_the_trace_when_off(s: Scenario) -> Result:
    """traced.c: disconnected-tracing off, the trace stops when gdb disconnects, and frames
    the program makes afterwards are not recorded."""
    define = s.define(trace("record_hit", "collect iteration"))
    s.gdb(
        *TO_MAIN, define, "set disconnected-tracing off", "break halfway", "tstart",
        "continue",  # record_hit 0..5 traced
        "disconnect",
    )
    s.server.wait_for(DISCONNECTED)
    r = s.gdb("tstatus", "break finished", "continue", "tstatus", "tfind 5", "print iteration", "tfind")
    assert "Trace is already running" not in r.of(s.connect)
    status = r.status()
    assert (status.stopped, status.collected, status.on_disconnect) == ("because of disconnection", 6, "stop"), status
    assert_in_order(r.of("continue"), r"Breakpoint 2, finished \(")
    assert r.status(1).collected == 6, r.status(1)
    assert r.value("print iteration") == "5"
    assert r.found("tfind") is None
    return r


def trace_survives_gdb_being_killed(s: Scenario, stop: str) -> Result:
    """disconnected-tracing on and gdb SIGKILLed while the program is stopped (at main): the
    program stays stopped where it was and the trace running, as gdbserver leaves them; a new
    gdb finds both, and the trace collects as the program goes on."""
    define = s.define(trace("record_hit", "collect iteration"))
    s.gdb_killed_after(*TO_MAIN, define, "set disconnected-tracing on", "tstart")
    s.server.wait_for(DISCONNECTED)
    time.sleep(0.5)  # (a program set running would tick, and collect, by then)
    assert not re.search(r"^tick ", s.server.output, re.M), "the program ran with no gdb"
    r = s.gdb("tstatus", "frame", "break record_hit if iteration == 20", "continue", "tstop", "tstatus",
              "tfind 10", "print iteration", "tfind none", "delete", stop, "continue")
    assert_in_order(r.of(s.connect), r"^Trace is already running on the target\.$")
    # Nothing ran while gdb was away.
    waiting = r.status()
    assert (waiting.running, waiting.collected) == (True, 0), waiting
    assert_in_order(r.of("frame"), r"^#0\s+main \(")
    assert_in_order(r.of("continue"), r"Breakpoint \d+, record_hit \(iteration=20")
    assert r.status(1).collected == 21, r.status(1)
    assert r.value("print iteration") == "10"
    s.exited(r.of("continue", 1), 0)
    return r


def disconnect_leaves_the_program_where_it_stopped(s: Scenario, stop: str) -> Result:
    """disconnected-tracing on, a trace running and the program stopped at a breakpoint, then
    gdb's `disconnect`: the program stays stopped there and the trace running, as gdbserver
    leaves them; the next gdb finds both, and the trace goes on when the program does."""
    define = s.define(trace("record_hit", "collect iteration"))
    s.gdb(*TO_MAIN, define, "set disconnected-tracing on", "tstart",
          "break record_hit if iteration == 5", "continue", "disconnect")
    s.server.wait_for(DISCONNECTED)
    r = s.gdb("tstatus", "frame", "print iteration", "delete", "break record_hit if iteration == 9", "continue",
              "tstop", "tstatus", "tfind 7", "print iteration", "tfind none", "delete", stop, "continue")
    assert_in_order(r.of(s.connect), r"^Trace is already running on the target\.$")
    waiting = r.status()
    assert (waiting.running, waiting.collected) == (True, 6), waiting
    assert_in_order(r.of("frame"), r"^#0\s+record_hit \(iteration=5")
    assert r.value("print iteration") == "5"
    assert_in_order(r.of("continue"), r"Breakpoint \d+, record_hit \(iteration=9")
    assert r.status(1).collected == 10, r.status(1)
    assert r.value("print iteration", 1) == "7"
    s.exited(r.of("continue", 1), 0)
    return r


# --------------------------------------------------------------------------- debug registers
# basic.c, its MARK lines watch_loop, watch_write and main_return.

EXITED_3 = r"exited with code 03\]$"


def watchpoint_reports_old_and_new_values(s: Scenario, arch: Arch) -> Result:
    """watch watched: three writes, each stop with the old and the new value; with the
    watchpoint gone the program runs to its end."""
    loop_line = s.line("watch_loop")
    # The trap comes after the store: the loop head (the write is its line's last
    # instruction), or where a machine may stop, the rest of the write's line.
    where = rf"^main \(\) at .*basic\.c:{loop_line}$"
    if arch.mid_line_traps:
        write_line = s.line("watch_write")
        where = rf"^(main \(\) at .*basic\.c:({loop_line}|{write_line})|0x[0-9a-f]+\s+{write_line}\s.*)$"
    r = s.gdb("break main", "continue", "watch watched", *["continue"] * 3, "delete 2", "continue")
    assert_in_order(r.of("watch watched"), r"^Hardware watchpoint 2: watched$")
    for i, (old, new) in enumerate([(0, 10), (10, 20), (20, 30)]):
        assert_in_order(
            r.of("continue", i + 1),
            r"^Hardware watchpoint 2: watched$",
            rf"^Old value = {old}$",
            rf"^New value = {new}$",
            where,
        )
    assert_in_order(r.of("continue", 4), EXITED_3)
    return r


def hardware_breakpoint(s: Scenario) -> Result:
    """hbreak square: hit twice, then deleted, the program runs to its end."""
    r = s.gdb("hbreak square", "continue", "continue", "delete", "continue")
    assert_in_order(r.of("hbreak square"), r"^Hardware assisted breakpoint 1 at 0x[0-9a-f]+: file .*basic\.c")
    assert_in_order(r.of("continue"), r"Breakpoint 1, square \(v=1\)")
    assert_in_order(r.of("continue", 1), r"Breakpoint 1, square \(v=2\)")
    assert_in_order(r.of("continue", 2), EXITED_3)
    return r


def access_watchpoint_sees_a_read(s: Scenario, arch: Arch) -> Result:
    """awatch exit_code: main reads it only in its return statement; the trap comes after
    the read, which may be that line's last instruction."""
    r = s.gdb("break sum_squares", "continue", "awatch exit_code", "continue", "continue")
    assert_in_order(r.of("awatch exit_code"), r"^Hardware access \(read/write\) watchpoint 2: exit_code$")
    ret = s.line("main_return")
    where = rf"main \(\) at .*basic\.c:({ret}|{ret + 1})$"
    if arch.mid_line_traps:
        where += rf"|^0x[0-9a-f]+\s+{ret}\s"
    assert_in_order(
        r.of("continue", 1),
        r"^Hardware access \(read/write\) watchpoint 2: exit_code$",
        r"^Value = 3$",
        where,
    )
    assert_in_order(r.of("continue", 2), EXITED_3)
    return r


def step_over_in_place(s: Scenario, arch: Arch, threads: int = 1, debug_says: bool = True) -> Result:
    """no_pad_room.c 5 [THREADS]: no free address near the code for a pad, so the trap
    tracepoint's instruction is stepped over in place (said in --debug: S must run the stub
    with it). Every hit is collected, while-stepping's steps too, and the program is right."""
    define = s.define(trace("traced", "collect n", while_stepping(2, f"collect ${arch.pc}")))
    walk = s.walk_available("n")
    r = s.gdb(*TO_MAIN, define, *trace_to(f"no_pad_room.c:{s.line('main_end')}"), walk, "tfind none", "continue")
    hits = 5 * threads
    values = r.available(walk)
    assert len(values) == r.status().collected, (values, r.status())
    if threads == 1:
        assert values == [v for i in range(5) for v in (str(i), "-", "-")], values
    else:
        # A hit while another thread steps over the site is not seen; the frames of the
        # threads interleave. Each hit's frame still comes with its two steps.
        collected = [v for v in values if v != "-"]
        assert 0 < len(collected) <= hits and len(values) == 3 * len(collected), values
        assert set(collected) <= {str(i) for i in range(5)}, values
    if debug_says:
        s.server.wait_for(r"trap tracepoint at 0x[0-9a-f]+: .*; stepping over it in place")
    s.server.wait_for(rf"^hits={hits} total=\d+ sum=\d+ right$")
    return r


# --------------------------------------------------------------------------- fast tracepoints
# The scenario is a FastTrace (tests/e2e) or BoardFastTrace (tests/arm64): the in-process agent
# preloaded. ftrace_loop.c's traced(i, 3) and leaf(i); ftrace_threads.c's work(id, round) in four
# threads; ftrace_shlib.c calling lib_traced(10 * i) in libftrace_lib.so.


def ftrace_mix(v: int) -> int:
    """ftrace_loop.c's mix() (v is never negative here)."""
    return v ^ (v >> 3)


def fast_shared_library(s: Scenario, arch: Arch) -> Result:
    """ftrace in a function of a shared library the program is linked against (its pad within
    reach of the library, not of the executable); the program then runs to its end with the
    right sum."""
    first = arch.argument_registers[0]
    define = s.define(ftrace("lib_traced", "collect $regs", "collect lib_hits, lib_last"))
    walk = s.walk(f"${first}", "lib_hits", "lib_last")
    r = s.gdb(*TO_MAIN, define, *trace_to("finished"), "tfind 2", "tdump", walk, "tfind none", "delete", "continue")
    tp = tracepoint_address(r.of(define), 2, fast=True, source="ftrace_lib")
    r.stopped_at(1, r"Breakpoint 3, finished \(")
    assert r.status().collected == 6, r.status()
    r.dumped(
        2, 2,
        rf"^{first}\s+0x14\s+20$",
        rf"^{arch.pc}\s+0x{tp:x}\s+0x{tp:x} <lib_traced\+\d+>$",
        r"^lib_hits = 2$",
        r"^lib_last = 10$",
    )
    # Frame k: lib_traced(10 * k), after lib_traced(10 * (k - 1)).
    expected = [(k, 2, 10 * k, k, 10 * (k - 1) if k else -1) for k in range(6)]
    assert r.frames(walk) == expected, r.of(walk)
    s.ends_as_natively(r.of("continue", 2))
    return r


def fast_frame_reads_the_program_image(s: Scenario, where: str) -> Result:
    """gdb with no setting beyond the sysroot (trust-readonly-sections off): fast frame 2 of
    ftrace_loop.c 4 at traced_late (WHERE "program": a PIE or not, as S was built) or of
    ftrace_shlib 4 at lib_traced's first line (WHERE "library") shows the arguments and
    locals it collected, and `frame` names them. gdb reads the function's code, which no
    frame holds, to unwind (arm64's prologue analysis) and to disassemble: the stub serves it
    from the live program's read-only image, at the addresses the program has it (gdb's QTro
    names the executable's sections at link-time addresses, and no library). What was neither
    collected nor read-only (a global in the data) stays <unavailable>, and the code in the
    frame reads as the program's, the jump hidden, the same as outside it."""
    if where == "library":
        location = f"ftrace_lib.c:{s.e2e.line('ftrace_lib', 'lib_entry')}"
        define = s.define(ftrace(location, "collect $regs, n"))
        shown = {"print n": "20"}
        frame, uncollected = r"^#0  lib_traced \(n=20\) at .*ftrace_lib\.c:\d+$", "print lib_last"
    else:
        define = s.define(ftrace(s.at("traced_late"), "collect $regs, n, scale, $locals"))
        shown = {"print n": "2", "print scale": "3", "print squared": "4", "print product": f"{ftrace_mix(12)}"}
        frame, uncollected = r"^#0  traced \(n=2, scale=3\) at .*ftrace_loop\.c:\d+$", "print untouched"
    # QTro naming all memory transparent makes no writable memory so: the data stays refused.
    variable = uncollected.removeprefix("print ")
    read_data = f'python gdb.execute("maint packet m%x,4" % int(gdb.parse_and_eval("(unsigned long) &{variable}")))'
    r = s.gdb(
        "show trust-readonly-sections", *TO_MAIN, define, *trace_to("finished"), "tfind 2", "set print entry-values no", "frame", *shown,
        uncollected, "maint packet QTro:0,ffffffffffffffff", read_data, "set $at = $pc", "x/2i $pc", "tfind none",
        "x/2i $at", *TO_THE_END,
    )
    assert re.search(r"\bis off\.$", r.of("show trust-readonly-sections"), re.M), r.of("show trust-readonly-sections")
    assert r.status().collected == 4, r.status()
    assert r.found("tfind 2") == (2, 2)
    assert re.search(frame, r.of("frame"), re.M), r.of("frame")
    assert {command: r.value(command) for command in shown} == shown, [r.of(c) for c in shown]
    assert r.value(uncollected) == "<unavailable>", r.of(uncollected)
    assert r.replies("maint packet QTro:0,ffffffffffffffff") == ["OK"]
    assert re.search(r'received: "E[0-9a-f]{2}"', r.of(read_data)), r.of(read_data)
    in_frame, live = r.of("x/2i $pc"), r.of("x/2i $at")
    assert "Cannot access memory" not in in_frame, in_frame
    # The same two instructions (the frame's listing marks the pc with "=>").
    strip = lambda text: [re.sub(r"^(=>)?\s*", "", line) for line in text.strip().splitlines()]
    assert strip(in_frame) == strip(live) and len(strip(live)) == 2, (in_frame, live)
    s.ends_as_natively(r.of("continue", 2))
    return r


def fast_condition_locals_and_memory(s: Scenario) -> Result:
    """ftrace_loop.c 10, ftrace LINE if n % 3 == 0: only the matching hits make frames, each
    with the locals, an array slice and a struct as traced(n) left them at that line."""
    define = s.define(
        ftrace(f"{s.at('traced_late')} if n % 3 == 0", "collect $locals, n", "collect bytes[4]@8, current")
    )
    walk = s.walk("n", "squared", "product", "current.id", "current.square", "bytes[4]", "bytes[11]")
    r = s.gdb(
        *TO_MAIN, define, *trace_to("finished"), "info tracepoints 2",
        "tfind 1", "tdump", "print bytes[3]", "print bytes[12]", walk, "tfind none", "delete", "continue",
    )
    assert_in_order(
        r.of("info tracepoints 2"),
        r"^2\s+fast tracepoint\s+keep y\s+0x[0-9a-f]+ in traced at .*ftrace_loop\.c:\d+$",
        r"^\s+trace only if n % 3 == 0$",
    )
    assert r.status().collected == 4, r.status()
    r.dumped(
        2, 1,
        r"^squared = 9$",
        rf"^product = {ftrace_mix(27)}$",
        r"^n = 3$",
        r'^bytes\[4\]@8 = "456789:;"$',
        r'^current = \{id = 3, square = 9, tag = "ftrace\\000"\}$',
    )
    # Only bytes[4..11] were collected.
    assert r.value("print bytes[3]") == "<unavailable>"
    assert r.value("print bytes[12]") == "<unavailable>"
    expected = [
        (k, 2, n, n * n, ftrace_mix(3 * n * n), n, n * n, (n * 16 + 4) & 0xFF, (n * 16 + 11) & 0xFF)
        for k, n in enumerate((0, 3, 6, 9))
    ]
    assert r.frames(walk) == expected, r.of(walk)
    s.ends_as_natively(r.of("continue", 2))
    return r


def fast_four_threads(s: Scenario, arch: Arch) -> Result:
    """ftrace_threads.c: four threads hit one fast tracepoint together, 50 times each: every
    hit is a frame holding its own thread's arguments, registers and locals, numbered in
    collection order."""
    threads, rounds = 4, 50
    first, second = arch.argument_registers
    define = s.define(ftrace("work", f"collect ${first}, ${second}, id, round"))
    walk = s.walk("id", "round", f"${first}", f"${second}")
    r = s.gdb(
        *TO_MAIN, define, "set trace-buffer-size 4194304", "set circular-trace-buffer off",
        *trace_to("all_done"), walk, "tfind none", "delete", "continue",
    )
    r.stopped_at(1, r"Breakpoint 3, all_done \(\)")
    r.trace_stopped("by a tstop command", threads * rounds)
    rows = r.frames(walk)
    assert [row[0] for row in rows] == list(range(threads * rounds)), r.of(walk)
    # The registers are the hitting thread's: the two arguments are work()'s id and round.
    assert all(row[2:4] == row[4:6] for row in rows), [row for row in rows if row[2:4] != row[4:6]]
    # Each thread's rounds appear once each, in order (a thread's own hits are in order).
    for tid in range(threads):
        assert [rnd for _, _, t, rnd, _, _ in rows if t == tid] == list(range(rounds)), (tid, rows)
    s.ends_as_natively(r.of("continue", 2))
    return r


def own_trap_under_a_conditional_breakpoint(s: Scenario) -> Result:
    """own_traps 3: gdb's breakpoint on the program's own trap instruction (trap_here, a
    permanent breakpoint in gdb's words), with a condition the stub evaluates: where it holds
    (the second call) the stop is that breakpoint's; where it does not, the thread goes past
    the trap as gdb would (gdb skips a permanent breakpoint by moving the pc past it), and the
    program ends normally. A stub that ran the trap, or reported it, stopped the program with
    SIGTRAP at the first call (gdb.base/bp-permanent.exp)."""
    r = s.gdb(*TO_MAIN, "break *trap_here if counter == 1", "continue", "print counter", "continue")
    assert_in_order(r.of("continue", 1), r"Breakpoint 2, .*own_trap")
    assert r.value("print counter") == "1"
    assert_in_order(r.of("continue", 2), r"\[Inferior 1 \(process \d+\) exited normally\]")
    assert "SIGTRAP" not in r.transcript, r.transcript
    return r


def call_returns_though_sigsegv_is_passed(s: Scenario) -> Result:
    """own_traps 0: gdb's call of return_one() returns to a breakpoint gdb may put on the
    stack, which cannot run code: the return then stops the thread with SIGSEGV, not SIGTRAP.
    gdb counts that as its breakpoint's hit, so the stub reports it although gdb said to pass
    SIGSEGV without stopping (`handle SIGSEGV nostop noprint`). A stub that passed it killed
    the program (gdb.base/catch-gdb-caused-signals.exp)."""
    r = s.gdb(*TO_MAIN, "handle SIGSEGV nostop noprint", "handle SIGILL nostop noprint", "print return_one()",
              "print return_one() + 1", "continue")
    assert r.value("print return_one()") == "1"
    assert r.value("print return_one() + 1") == "2"
    assert_in_order(r.of("continue", 1), r"\[Inferior 1 \(process \d+\) exited normally\]")
    return r
