"""Extended-remote (--multi): gdb starts programs itself, several times, and the server
outlives each gdb connection."""

from harness import DISCONNECTED, assert_in_order
from scenario import Scenario


def test_run_twice_then_reconnect(e2e):
    s = Scenario.multi(e2e, "basic")
    server = s.server
    assert not server.inferior_pids  # nothing runs until gdb says so

    r = s.gdb(
        s.exec_file, "break sum_squares", "run", "print n", "continue", "run", "set var exit_code = 6", "continue"
    )
    assert_in_order(r.of("run"), r"Breakpoint 1, sum_squares \(n=3\)")
    assert r.of("print n").strip() == "$1 = 3"
    assert_in_order(r.of("run", 1), r"Breakpoint 1, sum_squares \(n=3\)")
    assert len(server.inferior_pids) == 2
    first, second = server.inferior_pids
    assert first != second
    assert_in_order(r.of("continue"), rf"\[Inferior 1 \(process {first}\) exited with code 03\]")
    assert_in_order(r.of("continue", 1), rf"\[Inferior 1 \(process {second}\) exited with code 06\]")

    # gdb is gone; the server notices, keeps listening and serves a second gdb.
    server.wait_for_count(DISCONNECTED.pattern, 1)
    assert server.running()
    r = s.gdb(s.exec_file, "run")
    assert len(server.inferior_pids) == 3
    assert_in_order(r.of("run"), rf"\[Inferior 1 \(process {server.inferior_pids[2]}\) exited with code 03\]")
    server.wait_for_count(DISCONNECTED.pattern, 2)
    assert server.running()


def test_run_with_arguments(e2e):
    s = Scenario.multi(e2e, "crash")
    r = s.gdb(s.exec_file, "run segv")
    assert_in_order(r.of("run segv"), r"Program received signal SIGSEGV, Segmentation fault\.")


def test_restart_with_the_R_packet(e2e):
    """A gdb that does not use vRun (`set remote run-packet off`) restarts the program with R:
    the program started on the command line starts again, in a new process."""
    s = Scenario(e2e, "basic", extended=True)
    r = s.gdb(
        "set remote run-packet off", s.connect, "break sum_squares", "continue", "run", "print n",
        "continue", connect=False,
    )
    assert_in_order(r.of("continue"), r"Breakpoint 1, sum_squares \(n=3\)")
    assert_in_order(r.of("run"), r"Breakpoint 1, sum_squares \(n=3\)")
    assert r.of("print n").strip() == "$1 = 3"
    assert len(s.server.inferior_pids) == 2 and len(set(s.server.inferior_pids)) == 2, s.server.output
    second = s.server.inferior_pids[1]
    assert_in_order(r.of("continue", 1), rf"\[Inferior 1 \(process {second}\) exited with code 03\]")
