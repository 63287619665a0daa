"""How an inferior's life ends under the debugger: exit codes, kill, detach, fatal
signals; and how signals reach it (stop, pass, swallow)."""

from harness import assert_in_order, pid_alive, wait_until
from scenario import Scenario

def test_exit_code_is_reported(e2e):
    s = Scenario(e2e, "basic")
    r = s.gdb("continue")
    assert_in_order(r.of("continue"), rf"\[Inferior 1 \(process {s.pid}\) exited with code 03\]")
    s.server.wait_for(r"Child exited with status 3")
    assert s.server.wait_exit() == 0


def test_kill_from_gdb(e2e):
    s = Scenario(e2e, "basic")
    inferior = s.pid
    r = s.gdb("break square", "continue", "kill", "info program")
    assert_in_order(r.of("continue"), r"Breakpoint 1, square \(v=1\)")
    assert_in_order(r.of("kill"), rf"\[Inferior 1 \(process {inferior}\) killed\]")
    assert_in_order(r.of("info program"), r"The program being debugged is not being run\.")
    assert wait_until(lambda: not pid_alive(inferior)), "inferior survived kill"
    assert s.server.wait_exit() == 0
    assert "sum=" not in s.server.output  # it never got as far as printing


def test_detach_lets_the_program_finish(e2e):
    s = Scenario(e2e, "basic")
    inferior = s.pid
    # A breakpoint is inserted in square() when gdb detaches: it must be taken out, or
    # the freed process would die of SIGTRAP in its next call instead of printing.
    r = s.gdb("break square", "continue", "detach")
    assert_in_order(r.of("continue"), r"Breakpoint 1, square \(v=1\)")
    assert_in_order(r.of("detach"), rf"\[Inferior 1 \(process {inferior}\) detached\]")
    s.server.wait_for(r"^sum=14$")
    assert wait_until(lambda: not pid_alive(inferior)), "detached inferior did not finish"


def test_death_by_sigsegv(e2e):
    s = Scenario(e2e, "crash", "segv")
    r = s.gdb("continue", "print null_pointer", "continue")
    assert_in_order(
        r.of("continue"),
        r"Program received signal SIGSEGV, Segmentation fault\.",
        rf"main \(argc=2, argv=0x[0-9a-f]+\) at .*crash\.c:{s.line('segv')}",
    )
    assert r.of("print null_pointer").strip() == "$1 = (volatile int *) 0x0"
    assert_in_order(
        r.of("continue", 1),
        r"Program terminated with signal SIGSEGV, Segmentation fault\.",
        r"The program no longer exists\.",
    )
    assert s.server.wait_exit() == 0


def test_death_by_sigabrt(e2e):
    r = Scenario(e2e, "crash", "abort").gdb("continue", "bt", "continue")
    assert_in_order(r.of("continue"), r"Program received signal SIGABRT, Aborted\.")
    assert_in_order(r.of("bt"), r"abort", r"main \(argc=2")
    assert_in_order(r.of("continue", 1), r"Program terminated with signal SIGABRT, Aborted\.")


def test_signal_passed_without_stopping(e2e):
    r = Scenario(e2e, "signals").gdb("handle SIGUSR1 nostop noprint pass", "continue")
    # Exit code = number of handler runs: all three signals were delivered.
    assert_in_order(r.of("continue"), r"\[Inferior 1 \(process \d+\) exited with code 03\]")
    assert "SIGUSR1" not in r.of("continue")


def test_signal_stops_then_is_passed(e2e):
    r = Scenario(e2e, "signals").gdb(*["continue"] * 4)
    for i in range(3):
        assert_in_order(r.of("continue", i), r"Program received signal SIGUSR1, User defined signal 1\.")
    assert_in_order(r.of("continue", 3), r"exited with code 03\]")


def test_signal_swallowed(e2e):
    r = Scenario(e2e, "signals").gdb("handle SIGUSR1 nostop noprint nopass", "continue")
    # The handler never ran: the exit code is 0.
    assert_in_order(r.of("continue"), r"\[Inferior 1 \(process \d+\) exited normally\]")


def test_wrapper_runs_before_the_program(e2e):
    s = Scenario(e2e, "env_exit", options=("--wrapper", "env", "E2E_EXIT=7", "--"))
    r = s.gdb("break main", "continue", "continue")
    # The wrapper exec'd the program: gdb stops in its main, not in env's.
    assert_in_order(r.of("continue"), r"Breakpoint 1, main \(\) at .*env_exit\.c")
    assert_in_order(r.of("continue", 1), r"exited with code 07\]")
