"""The terminal: a program the server starts from a terminal gets it, as with gdbserver. It
reads what is typed there, a ^C typed there interrupts it (gdb reports the SIGINT), and gdb's
own interrupt still works after that. The server runs on a pseudo-terminal of its own, as
if started from a shell; the program says back each line it reads."""

import signal

from harness import assert_in_order
from scenario import Scenario

PROGRAM = "reads_terminal"
SIGINT = r"Program received signal SIGINT, Interrupt\."


def test_program_reads_the_terminal_and_ctrl_c_there_interrupts_it(e2e):
    s = Scenario(e2e, PROGRAM, server=e2e.serve(e2e.program(PROGRAM), tty=True))
    gdb = s.gdb_start("continue", "print lines_read", "continue", "print lines_read", "kill")
    s.server.type(b"hello\n")  # kept by the terminal until the program reads it
    s.server.wait_for(r"^got hello$")
    s.server.type(b"\x03")  # ^C at the server's terminal: the terminal signals the program
    s.server.type(b"again\n")
    s.server.wait_for(r"^got again$")  # read once gdb has resumed it
    gdb.proc.send_signal(signal.SIGINT)  # ^C at gdb's: gdb asks the server to interrupt
    r = s.wait(gdb)
    assert_in_order(r.of("continue"), SIGINT)
    assert r.of("print lines_read").strip() == "$1 = 1"
    assert_in_order(r.of("continue", 1), SIGINT)
    assert r.of("print lines_read", 1).strip() == "$2 = 2"
