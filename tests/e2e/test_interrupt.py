"""Interrupting a running program from gdb (Ctrl-C): gdb sends the interrupt byte, the
server stops the inferior and reports SIGINT.

gdb -batch reads no keyboard, so the key press is made in two ways: SIGINT sent to the
gdb process (what the terminal does on ^C), and a real ^C typed on a pseudo-terminal
that is gdb's controlling terminal. Either way gdb must be inside 'continue' first:
spin.c creates a file once it runs, and only then do we press ^C.
"""

import re
import signal

from harness import assert_in_order

PROGRAM = "spin"
COMMANDS_AFTER_STOP = ["print spins > 0", "info program", "kill"]


def check_interrupted(r, e2e):
    assert_in_order(
        r.of("continue"),
        r"Program received signal SIGINT, Interrupt\.",
        r"main \(argc=2, argv=0x[0-9a-f]+\) at .*spin\.c:\d+",
    )
    assert r.of("print spins > 0").strip() == "$1 = 1"
    assert re.search(r"It stopped at a breakpoint|It stopped at a signal|stopped", r.of("info program")), r
    assert_in_order(r.of("kill"), r"\[Inferior 1 \(process \d+\) killed\]")


def test_interrupt_with_sigint(e2e):
    program = e2e.program(PROGRAM)
    ready = e2e.tmp / "ready"
    server = e2e.serve(program, str(ready))
    gdb = e2e.gdb_start(server.remote, "continue", *COMMANDS_AFTER_STOP, program=program)
    e2e.wait_for_file(ready)
    gdb.proc.send_signal(signal.SIGINT)
    r = e2e.show(gdb.wait())
    check_interrupted(r, e2e)


def test_interrupt_with_ctrl_c_on_a_terminal(e2e):
    program = e2e.program(PROGRAM)
    ready = e2e.tmp / "ready"
    server = e2e.serve(program, str(ready))
    gdb = e2e.gdb_start(server.remote, "continue", *COMMANDS_AFTER_STOP, program=program, tty=True)
    e2e.wait_for_file(ready)
    gdb.type(b"\x03")
    r = e2e.show(gdb.wait())
    check_interrupted(r, e2e)


def test_interrupt_twice_in_one_session(e2e):
    """After an interrupt the program can be resumed and interrupted again."""
    program = e2e.program(PROGRAM)
    ready = e2e.tmp / "ready"
    server = e2e.serve(program, str(ready))
    gdb = e2e.gdb_start(
        server.remote,
        "continue",
        "set var announce = 1",  # spin.c makes the file again once it runs
        "continue",
        "print announce",
        "kill",
        program=program,
    )
    e2e.wait_for_file(ready)
    gdb.proc.send_signal(signal.SIGINT)
    e2e.wait_for_file(ready, "2\n")
    gdb.proc.send_signal(signal.SIGINT)
    r = e2e.show(gdb.wait())
    assert_in_order(r.of("continue"), r"Program received signal SIGINT, Interrupt\.")
    assert_in_order(r.of("continue", 1), r"Program received signal SIGINT, Interrupt\.")
    assert r.of("print announce").strip() == "$1 = 0"
