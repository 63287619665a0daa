"""Trap tracepoints on the arm64 board, against each stub: what they collect ($regs, $args,
$locals, globals, a struct, memory ranges, *pointer, a string, an expression), checked value
by value in each frame; every tfind form and tdump; while-stepping; tsave (gdb writes the
file) and target tfile; four threads hitting one tracepoint.

traced.c's record_hit(iteration, 3) runs once per iteration, then other_hit(iteration):
every collected value follows from the iteration number. gdb runs the program to main
first, so tracepoints are numbered from 2.
"""

import re

from harness import assert_in_order, hex_value
from scenario import TO_MAIN, trace, trace_to, tracepoint_address, while_stepping
from board import BoardScenario

PROGRAM = "traced"
# table[1..3] collected, not the others: how gdb prints the others.
UNAVAILABLE = ", ".join(["<unavailable>"] * 4)


def test_collect_and_find_frames(arm64):
    """$regs, $args, $locals, globals, a struct, an array slice, *pointer, a string and an
    expression; then every tfind form walks the 12 frames of 4 iterations."""
    s = BoardScenario(arm64, PROGRAM, "4")
    record_return = s.line("record_return")
    define = s.define(
        trace("record_hit", "collect $regs", "collect $args"),
        trace(
            s.at("record_return"),
            "collect $locals",
            "collect counter, current, table[1]@3, *cursor, *greeting@5",
            "collect iteration * 100 + scale",
        ),
        trace("other_hit", "collect iteration"),
    )
    r = s.gdb(
        *TO_MAIN, define, *trace_to("finished"),
        # Frame 0: tracepoint 2, iteration 0.
        "tfind start", "tdump", "print iteration", "print untouched", "print $trace_frame", "print $tracepoint",
        "info registers pc", "print $x1", "print/x $v0.d.u[0]",
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
    r.dumped(
        2, 0,
        r"^x0\s+0x0\s+0$",  # iteration, the first argument, still in its register
        r"^x1\s+0x3\s+3$",  # scale, the second
        rf"^pc\s+0x{tp2:x}\s+0x{tp2:x} <record_hit\+\d+>$",
        r"^cpsr\s+0x[0-9a-f]+\s+\[ ",
        r"^iteration = 0$",
        r"^scale = 3$",
    )
    assert r.value("print iteration") == "0"
    assert r.value("print untouched") == "<unavailable>"
    assert r.value("print $trace_frame") == "0"
    assert r.value("print $tracepoint") == "2"
    assert hex_value(r.of("info registers pc"), r"(?m)^pc\s+0x([0-9a-f]+)\s") == tp2
    assert r.value("print $x1") == "3"
    # $regs holds the SIMD registers too.
    assert re.fullmatch(r"0x[0-9a-f]+", r.value("print/x $v0.d.u[0]")), r.of("print/x $v0.d.u[0]")

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


def test_while_stepping(arm64):
    """while-stepping 3 adds three frames per hit, at the next three instructions."""
    s = BoardScenario(arm64, PROGRAM, "2")
    define = s.define(trace("stepped", "collect x", while_stepping(3, "collect $pc")))
    r = s.gdb(
        *TO_MAIN, define, *trace_to("finished"),
        "info tracepoints 2",  # leaves the tracepoint's address in $_
        "x/4i $_",  # the tracepoint's instruction and the three stepped through
        "tfind start", "print x", "print/x $pc",
        "tfind", "tdump", "print x",
        "tfind", "print/x $pc", "tfind", "print/x $pc",
        "tfind", "tdump", "tfind 7", "print/x $pc", "tfind",
    )
    tp = tracepoint_address(r.of(define), 2, source=PROGRAM)
    # 2 hits, each 1 + 3 frames.
    assert r.status().collected == 8, r.status()
    pcs = [int(a, 16) for a in re.findall(r"^(?:=> )?\s*0x([0-9a-f]+) <stepped\+\d+>:", r.of("x/4i $_"), re.M)]
    # Straight-line code: each instruction 4 bytes after the previous.
    assert pcs == [tp, tp + 4, tp + 8, tp + 12], r.of("x/4i $_")

    assert r.value("print x") == "0"
    assert r.value("print/x $pc") == f"0x{tp:x}"
    assert r.found("tfind") == (1, 2)
    # A stepping frame holds what the while-stepping list collected, nothing else.
    r.dumped(2, 1, rf"^\$pc = .*0x{pcs[1]:x} ")
    assert r.value("print x", 1) == "<unavailable>"
    assert r.value("print/x $pc", 1) == f"0x{pcs[2]:x}"
    assert r.value("print/x $pc", 2) == f"0x{pcs[3]:x}"
    # The second hit: the tracepoint's own collection again, then its steps.
    r.dumped(2, 4, r"^x = 1$", nth=1)
    assert r.value("print/x $pc", 3) == f"0x{pcs[3]:x}"
    assert r.found("tfind", 4) is None


def test_tsave_and_tfile(arm64):
    """tsave pulls the buffer into a trace file on the host; a new gdb reads it with target
    tfile (the symbols loaded at the run's load offset)."""
    trace_file = arm64.tmp / "run.tf"
    s = BoardScenario(arm64, PROGRAM, "6")
    collect = ("collect $regs, iteration, current, table[1]@3", "teval $hits = $hits + 1", "collect $hits")
    define = s.define("tvariable $hits = 100", trace(s.at("record_first"), *collect))
    live = s.trace_and_save(define, "tfind 4", "print/x $pc", "print $sp", "tfind none", f"tsave {trace_file}",
                            anchor="record_hit")
    assert live.of(f"tsave {trace_file}").strip() == ""
    assert trace_file.read_bytes().startswith(b"\x7fTRACE0\n")

    r = s.open_trace_file(
        trace_file,
        "tstatus", "info tvariables", "tfind 4", "tdump", "print/x $pc", "print $sp", "print untouched",
        "print table", "tfind", "tfind",
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
        r"^x0\s+0x4\s+4$",
        r"^x1\s+0x3\s+3$",
        r"^iteration = 4$",
        r'^current = \{id = 3, kind = 5, total = 42, label = "first\\000\\000"\}$',
        r"^table\[1\]@3 = \{11, 12, 13\}$",
        r"^\$hits = 105$",
    )
    # The registers in the file are the live frame's.
    assert r.value("print/x $pc") == live.value("print/x $pc")
    assert r.value("print $sp") == live.value("print $sp")
    assert r.value("print untouched") == "<unavailable>"
    assert r.value("print table") == f"{{<unavailable>, 11, 12, 13, {UNAVAILABLE}}}"
    assert [r.found("tfind", n) for n in range(2)] == [(5, 1), None]


THREADS, ROUNDS = 4, 5


def test_concurrent_hits_in_threads(arm64):
    """Four threads hit one tracepoint at the same time: every hit makes a frame, and each
    frame holds the registers of the thread that hit it (its own stack pointer)."""
    s = BoardScenario(arm64, "traced_threads")
    define = s.define(trace("work", "collect id, round, $sp"))
    walk = s.walk("id", "round", "$sp")
    r = s.gdb(*TO_MAIN, define, *trace_to("all_done"), walk)
    r.stopped_at(1, r"Breakpoint 3, all_done \(\)")
    assert r.status().collected == THREADS * ROUNDS, r.status()
    rows = [(frame, tid, rnd, sp) for frame, _, tid, rnd, sp in r.frames(walk)]
    assert [row[0] for row in rows] == list(range(THREADS * ROUNDS)), r.of(walk)
    # Each thread's rounds appear once each, in order (frames are in hit order).
    for tid in range(THREADS):
        assert [rnd for _, t, rnd, _ in rows if t == tid] == list(range(ROUNDS)), (tid, rows)
    # One stack pointer per thread (the same call depth each round), a different one for each.
    stacks = {tid: {sp for _, t, _, sp in rows if t == tid} for tid in range(THREADS)}
    assert all(len(sps) == 1 for sps in stacks.values()), stacks
    assert len(set.union(*stacks.values())) == THREADS, stacks
