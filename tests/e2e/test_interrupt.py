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
from scenario import Scenario

PROGRAM = "spin"
COMMANDS_AFTER_STOP = ["print spins > 0", "info program", "kill"]
SIGINT = r"Program received signal SIGINT, Interrupt\."


def interrupted(e2e, press, *commands: str, tty: bool = False, times: int = 1):
    """gdb runs COMMANDS; each time spin.c says it runs (it writes its file, once, then
    again each time it is told to), PRESS(gdb) interrupts it; gdb's run when it is done."""
    ready = e2e.tmp / "ready"
    s = Scenario(e2e, PROGRAM, str(ready))
    gdb = s.gdb_start(*commands, tty=tty)
    for n in range(times):
        # (Its content, not the file alone: fopen makes the file before the program writes and
        # closes it, and ^C there would stop it inside the C library, not in its loop.)
        e2e.wait_for_file(ready, f"{n + 1}\n")
        press(gdb)
    return s.wait(gdb)


def sigint(gdb) -> None:
    gdb.proc.send_signal(signal.SIGINT)


def check_interrupted(r):
    assert_in_order(r.of("continue"), SIGINT, r"main \(argc=2, argv=0x[0-9a-f]+\) at .*spin\.c:\d+")
    assert r.of("print spins > 0").strip() == "$1 = 1"
    assert re.search(r"It stopped at a breakpoint|It stopped at a signal|stopped", r.of("info program")), r
    assert_in_order(r.of("kill"), r"\[Inferior 1 \(process \d+\) killed\]")


def test_interrupt_with_sigint(e2e):
    check_interrupted(interrupted(e2e, sigint, "continue", *COMMANDS_AFTER_STOP))


def test_interrupt_with_ctrl_c_on_a_terminal(e2e):
    check_interrupted(interrupted(e2e, lambda gdb: gdb.type(b"\x03"), "continue", *COMMANDS_AFTER_STOP, tty=True))


def test_interrupt_twice_in_one_session(e2e):
    """After an interrupt the program can be resumed and interrupted again."""
    r = interrupted(
        e2e, sigint,
        "continue",
        "set var announce = 1",  # spin.c makes the file again once it runs
        "continue", "print announce", "kill",
        times=2,
    )
    assert_in_order(r.of("continue"), SIGINT)
    assert_in_order(r.of("continue", 1), SIGINT)
    assert r.of("print announce").strip() == "$1 = 0"
