"""Tracepoints collect data while the program runs; tfind/tdump/print read it back.

traced.c's record_hit(iteration, 3) runs once per iteration, then other_hit(iteration):
every collected value follows from the iteration number, so each frame can be checked.
gdb runs the program to main first (tracepoints need the program's final addresses), so
breakpoint 1 is gone and tracepoints are numbered from 2.
"""

import re

from harness import assert_in_order, hex_value, printed_value

PROGRAM = "traced"
TO_MAIN = ("break main", "continue", "delete")


def tracepoint_address(text: str, number: int) -> int:
    return hex_value(text, rf"Tracepoint {number} at 0x([0-9a-f]+): file .*traced\.c, line \d+\.")


def test_collect_and_find_frames(e2e):
    """$regs, $args, $locals, globals, a struct, an array slice, *pointer, a string and an
    expression; then every tfind form walks the 12 frames of 4 iterations."""
    program = e2e.program(PROGRAM)
    server = e2e.serve(program, "4")
    record_return = e2e.line(PROGRAM, "record_return")
    define = e2e.command_file(
        "trace record_hit",
        "actions",
        "collect $regs",
        "collect $args",
        "end",
        f"trace traced.c:{record_return}",
        "actions",
        "collect $locals",
        "collect counter, current, table[1]@3, *cursor, *greeting@5",
        "collect iteration * 100 + scale",
        "end",
        "trace other_hit",
        "actions",
        "collect iteration",
        "end",
    )
    r = e2e.gdb(
        server.remote,
        *TO_MAIN,
        define,
        "break finished",
        "tstart",
        "continue",
        "tstop",
        "tstatus",
        # Frame 0: tracepoint 2, iteration 0.
        "tfind start",
        "tdump",
        "print iteration",
        "print untouched",
        "print $trace_frame",
        "print $tracepoint",
        "info registers rip",
        # Frames go 2, 3, 4 per iteration: frame 7 is tracepoint 3 in iteration 2.
        "tfind",
        "tfind 7",
        "tdump",
        "print table",
        "print current.total",
        "tfind tracepoint 2",
        "print iteration",
        # "info tracepoints N" leaves N's address in $_.
        "info tracepoints 4",
        "tfind pc $_",
        "print iteration",
        "tfind start",
        "tfind range other_hit, stepped",
        "tfind outside record_hit, other_hit",
        f"tfind line {record_return}",
        "print iteration",
        "tfind end",
        "print $trace_frame",
        "print counter",
        program=program,
    )
    tp2 = tracepoint_address(r.of(define), 2)
    tp4 = tracepoint_address(r.of(define), 4)
    assert_in_order(r.of(define), rf"Tracepoint 3 at 0x[0-9a-f]+: file .*traced\.c, line {record_return}\.")

    assert_in_order(r.of("continue", 1), r"Breakpoint 5, finished \(result=\d+\)")
    assert_in_order(r.of("tstatus"), r"^Trace stopped by a tstop command", r"^Collected 12 trace frames\.$")

    assert r.of("tfind start").startswith("Found trace frame 0, tracepoint 2\n"), r.of("tfind start")
    assert_in_order(
        r.of("tdump"),
        r"^Data collected at tracepoint 2, trace frame 0:$",
        r"^rsi\s+0x3\s+3$",  # scale, the second argument, still in its register
        rf"^rip\s+0x{tp2:x}\s+0x{tp2:x} <record_hit\+\d+>$",
        r"^iteration = 0$",
        r"^scale = 3$",
    )
    assert printed_value(r.of("print iteration")) == "0"
    assert printed_value(r.of("print untouched")) == "<unavailable>"
    assert printed_value(r.of("print $trace_frame")) == "0"
    assert printed_value(r.of("print $tracepoint")) == "2"
    assert hex_value(r.of("info registers rip"), r"(?m)^rip\s+0x([0-9a-f]+)\s") == tp2

    assert r.of("tfind").startswith("Found trace frame 1, tracepoint 3\n"), r.of("tfind")
    assert r.of("tfind 7").startswith("Found trace frame 7, tracepoint 3\n"), r.of("tfind 7")
    assert_in_order(
        r.of("tdump", 1),
        r"^Data collected at tracepoint 3, trace frame 7:$",
        r"^squared = 4$",
        r"^scaled = 12$",
        r"^counter = 3$",
        r'^current = \{id = 2, kind = 5, total = 15, label = "first\\000\\000"\}$',
        r"^table\[1\]@3 = \{11, 12, 13\}$",
        r"^\*cursor = 12$",
        r'^\*greeting@5 = "hello"$',
        r"^iteration \* 100 \+ scale = 203$",
    )
    # Only table[1..3] were collected (*cursor is table[2]).
    unavailable = ", ".join(["<unavailable>"] * 4)
    assert printed_value(r.of("print table")) == f"{{<unavailable>, 11, 12, 13, {unavailable}}}"
    assert printed_value(r.of("print current.total")) == "15"

    assert r.of("tfind tracepoint 2").startswith("Found trace frame 9, tracepoint 2\n")
    assert printed_value(r.of("print iteration", 1)) == "3"
    assert hex_value(r.of("info tracepoints 4"), r"(?m)^4\s+tracepoint\s+keep y\s+0x([0-9a-f]+) in other_hit") == tp4
    assert r.of("tfind pc $_").startswith("Found trace frame 11, tracepoint 4\n"), r.of("tfind pc $_")
    assert printed_value(r.of("print iteration", 2)) == "3"

    assert r.of("tfind range other_hit, stepped").startswith("Found trace frame 2, tracepoint 4\n")
    assert r.of("tfind outside record_hit, other_hit").startswith("Found trace frame 5, tracepoint 4\n")
    assert r.of(f"tfind line {record_return}").startswith("Found trace frame 7, tracepoint 3\n")
    assert printed_value(r.of("print iteration", 3)) == "2"

    assert r.of("tfind end").strip() == "No longer looking at any trace frame"
    assert printed_value(r.of("print $trace_frame", 1)) == "-1"
    # Live memory again: the program finished all 4 iterations.
    assert printed_value(r.of("print counter")) == "4"


def test_while_stepping(e2e):
    """while-stepping 3 adds three frames per hit, at the next three instructions."""
    program = e2e.program(PROGRAM)
    server = e2e.serve(program, "2")
    define = e2e.command_file(
        "trace stepped",
        "actions",
        "collect x",
        "while-stepping 3",
        "collect $rip",  # $pc is a user register gdb cannot collect; $rip is the PC itself
        "end",
        "end",
    )
    r = e2e.gdb(
        server.remote,
        *TO_MAIN,
        define,
        "break finished",
        "tstart",
        "continue",
        "tstop",
        "tstatus",
        "info tracepoints 2",  # leaves the tracepoint's address in $_
        "x/4i $_",  # the tracepoint's instruction and the three stepped through
        "tfind start",
        "print x",
        "print/x $rip",
        "tfind",
        "tdump",
        "print x",
        "tfind",
        "print/x $rip",
        "tfind",
        "print/x $rip",
        "tfind",
        "tdump",
        "tfind 7",
        "print/x $rip",
        "tfind",
        program=program,
    )
    tp = tracepoint_address(r.of(define), 2)
    # 2 hits, each 1 + 3 frames.
    assert_in_order(r.of("tstatus"), r"^Collected 8 trace frames\.$")
    pcs = [int(a, 16) for a in re.findall(r"^(?:=> )?\s*0x([0-9a-f]+) <stepped\+\d+>:", r.of("x/4i $_"), re.M)]
    assert len(pcs) == 4 and pcs[0] == tp, r.of("x/4i $_")

    assert printed_value(r.of("print x")) == "0"
    assert printed_value(r.of("print/x $rip")) == f"0x{tp:x}"
    assert r.of("tfind").startswith("Found trace frame 1, tracepoint 2\n")
    # A stepping frame holds what the while-stepping list collected, nothing else.
    assert_in_order(r.of("tdump"), r"^Data collected at tracepoint 2, trace frame 1:$", rf"^\$rip = .*0x{pcs[1]:x} ")
    assert printed_value(r.of("print x", 1)) == "<unavailable>"
    assert printed_value(r.of("print/x $rip", 1)) == f"0x{pcs[2]:x}"
    assert printed_value(r.of("print/x $rip", 2)) == f"0x{pcs[3]:x}"
    # The second hit: the tracepoint's own collection again, then its steps.
    assert_in_order(r.of("tdump", 1), r"^Data collected at tracepoint 2, trace frame 4:$", r"^x = 1$")
    assert printed_value(r.of("print/x $rip", 3)) == f"0x{pcs[3]:x}"
    assert r.of("tfind", 4).strip() == "No trace frame found"


def test_tsave_and_tfile(e2e):
    """tsave pulls the buffer into a trace file; a new gdb reads it with target tfile.

    The tracepoint is set by line so that the file's tracepoint resolves to the same
    address without a live process; the symbols are loaded at the run's load offset."""
    program = e2e.program(PROGRAM)
    server = e2e.serve(program, "6")
    trace_file = e2e.tmp / "run.tf"
    first = e2e.line(PROGRAM, "record_first")
    define = e2e.command_file(
        "tvariable $hits = 100",
        f"trace traced.c:{first}",
        "actions",
        "collect iteration, current, table[1]@3",
        "teval $hits = $hits + 1",
        "collect $hits",
        "end",
    )
    live = e2e.gdb(
        server.remote,
        *TO_MAIN,
        define,
        "break finished",
        "tstart",
        "continue",
        "tstop",
        "print/x &record_hit",
        f"tsave {trace_file}",
        program=program,
    )
    # (gdb -batch says nothing on success.)
    assert live.of(f"tsave {trace_file}").strip() == ""
    assert trace_file.read_bytes().startswith(b"\x7fTRACE0\n")
    runtime = hex_value(live.of("print/x &record_hit"), r"= 0x([0-9a-f]+)$")

    r = e2e.gdb(
        f'eval "symbol-file -o %lu {program}", {runtime} - (unsigned long)&record_hit',
        f"target tfile {trace_file}",
        "tstatus",
        "info tvariables",
        "tfind 4",
        "tdump",
        "print untouched",
        "print table",
        "tfind",
        "tfind",
        program=program,
    )
    assert_in_order(
        r.of(f"target tfile {trace_file}"),
        rf"Created tracepoint 1 for target's tracepoint 2 at 0x[0-9a-f]+\.",
    )
    assert_in_order(
        r.of("tstatus"),
        r"^Using a trace file\.$",
        r"^Trace stopped by a tstop command",
        r"^Collected 6 trace frames\.$",
    )
    assert re.search(r"^\$hits\s+100\s", r.of("info tvariables"), re.M), r.of("info tvariables")
    assert r.of("tfind 4").startswith("Found trace frame 4, tracepoint 1\n"), r.of("tfind 4")
    assert_in_order(
        r.of("tdump"),
        r"^iteration = 4$",
        r'^current = \{id = 3, kind = 5, total = 42, label = "first\\000\\000"\}$',
        r"^table\[1\]@3 = \{11, 12, 13\}$",
        r"^\$hits = 105$",
    )
    assert printed_value(r.of("print untouched")) == "<unavailable>"
    unavailable = ", ".join(["<unavailable>"] * 4)
    assert printed_value(r.of("print table")) == f"{{<unavailable>, 11, 12, 13, {unavailable}}}"
    assert r.of("tfind").startswith("Found trace frame 5, tracepoint 1\n")
    assert r.of("tfind", 1).strip() == "No trace frame found"
