"""`catch syscall` (QCatchSyscalls): the program stops at the entry and the return of the
system calls gdb names, and at no other; without a catchpoint it runs as before. Runs against
both stubs."""

from harness import assert_in_order
from scenario import Scenario

PROGRAM = "syscalls"
CALL = r"Catchpoint {n} \(call to syscall {name}\)"
RETURN = r"Catchpoint {n} \(returned from syscall {name}\)"


def test_catch_syscall_entry_and_return(e2e):
    s = Scenario(e2e, PROGRAM)
    r = s.gdb(
        "break main", "continue", "catch syscall close",
        "continue", "continue", "continue", "info breakpoints",
        "delete", "catch syscall write", "continue", "continue", "continue",
    )
    assert_in_order(r.of("continue", 1), CALL.format(n=2, name="close"), r"__GI___close|close")
    assert_in_order(r.of("continue", 2), RETURN.format(n=2, name="close"))
    assert_in_order(r.of("continue", 3), CALL.format(n=2, name="close"))
    assert_in_order(r.of("info breakpoints"), r'syscall "close"', r"catchpoint already hit 3 times")
    # open, the other calls of the loop and the rest of close went by: the next stop is write.
    assert_in_order(r.of("continue", 4), CALL.format(n=3, name="write"))
    assert_in_order(r.of("continue", 5), RETURN.format(n=3, name="write"))
    s.server.wait_for(r"^done$")  # the program's output, on the server's
    assert_in_order(r.of("continue", 6), r"\[Inferior 1 \(process \d+\) exited normally\]")
