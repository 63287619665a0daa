"""The everyday debugging session, over each transport: TCP, stdio pipe, serial tty.

One gdb run walks through basic.c: break, continue, bt, print, next, step, finish,
until, x, info registers, set var; the changed exit code proves the write landed.
"""

import re

from harness import assert_in_order, hex_value
from scenario import Scenario

PROGRAM = "basic"


def smoke_commands(e2e) -> list[str]:
    """The session, after the connection."""
    return [
        "break sum_squares", "continue", "bt", "print n", "next", "next", "step", "finish",
        f"until {e2e.line(PROGRAM, 'sum_return')}", "print total", "up", "print p", "print p.x * 100 + p.y",
        "info registers rip", "print/x $pc", "x/4dw squares", "set var exit_code = 5", "print exit_code", "continue",
    ]


def check_smoke(r, e2e) -> None:
    line = lambda mark: e2e.line(PROGRAM, mark)  # noqa: E731
    set_at = rf"Breakpoint 1 at 0x[0-9a-f]+: file .*basic\.c, line {line('sum_first')}\."
    assert re.search(set_at, r.of("break sum_squares")), r

    assert_in_order(r.of("continue"), rf"Breakpoint 1, sum_squares \(n=3\) at .*basic\.c:{line('sum_first')}")

    assert_in_order(
        r.of("bt"),
        r"^#0  sum_squares \(n=3\) at .*basic\.c:\d+",
        rf"^#1  0x[0-9a-f]+ in main \(\) at .*basic\.c:{line('main_call')}",
    )
    assert r.of("print n").strip() == "$1 = 3"

    # next, next: to the loop head, then into the body; step enters square(1).
    assert re.match(rf"{line('sum_loop')}\s+for \(int i = 1;", r.of("next")), r
    assert re.match(rf"{line('sum_call')}\s+total \+= square\(i\);", r.of("next", 1)), r
    assert_in_order(r.of("step"), rf"square \(v=1\) at .*basic\.c:{line('square_body')}")

    assert_in_order(
        r.of("finish"),
        r"in sum_squares \(n=3\)",
        r"Value returned is \$2 = 1",
    )
    # until runs the rest of the loop (squares of 2 and 3) and stops at the return.
    assert_in_order(r.of(f"until {line('sum_return')}"), rf"sum_squares \(n=3\) at .*basic\.c:{line('sum_return')}")
    assert r.of("print total").strip() == "$3 = 14"

    assert_in_order(r.of("up"), r"#1  0x[0-9a-f]+ in main \(\)")
    assert r.of("print p").strip() == "$4 = {x = 3, y = 4}"
    assert r.of("print p.x * 100 + p.y").strip() == "$5 = 304"

    rip = hex_value(r.of("info registers rip"), r"^rip\s+0x([0-9a-f]+)\s")
    pc = hex_value(r.of("print/x $pc"), r"^\$6 = 0x([0-9a-f]+)$")
    assert rip == pc != 0

    assert re.match(r"0x[0-9a-f]+ <squares>:\s+1\s+4\s+9\s+16\s*$", r.of("x/4dw squares")), r.of("x/4dw squares")
    assert r.of("print exit_code").strip() == "$7 = 5"
    assert_in_order(r.of("continue", 1), r"\[Inferior 1 \(process \d+\) exited with code 05\]")


def test_tcp_session(e2e):
    s = Scenario(e2e, PROGRAM)
    check_smoke(s.gdb(*smoke_commands(e2e)), e2e)
    # The server saw gdb connect, saw its child exit, and then ends by itself.
    s.server.wait_for(r"Remote debugging from host 127\.0\.0\.1, port \d+")
    s.server.wait_for(r"Child exited with status 5")
    assert s.server.wait_exit() == 0
    # The inferior shares the server's stdout.
    assert "sum=14" in s.server.output


def test_stdio_session(e2e):
    program = e2e.program(PROGRAM)
    # No --debug here even with TPAGENT_E2E_DEBUG: the server's stderr is gdb's, and a
    # debug log would be mixed into what the commands print.
    connect = f"target remote | {e2e.server_bin.path} - {program}"
    r = e2e.gdb(connect, *smoke_commands(e2e), program=program)
    check_smoke(r, e2e)
    assert r.returncode == 0, r


def test_serial_tty_session(e2e):
    program = e2e.program(PROGRAM)
    server_end, gdb_end = e2e.pty_pair()
    server = e2e.start_server(*e2e.server_bin.tty_options(115200), server_end, str(program))
    server.wait_for(r"Process .* created; pid = \d+")
    commands = ["set serial baud 115200", f"target remote {gdb_end}", *smoke_commands(e2e)]
    r = e2e.gdb(*commands, program=program)
    check_smoke(r, e2e)
    # A serial line has no hang-up when gdb leaves, so the server keeps waiting for
    # packets there; teardown ends it.
    server.wait_for(r"Child exited with status 5")
