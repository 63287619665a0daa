"""gdb dies mid-session (SIGKILL, so it says nothing to the server first).

--once: the server kills its inferior and exits. Default: it keeps the stopped
inferior and listens again, so a new gdb can carry on. --multi: it keeps listening.
"""

import pytest

from harness import DISCONNECTED, assert_in_order, pid_alive, wait_until


def start_gdb_and_kill_it(e2e, server, program, *commands):
    """gdb runs commands, then touches a file and sleeps; once the file appears gdb is
    mid-session with the inferior stopped, and we kill it."""
    marker = e2e.tmp / "gdb-reached-the-end"
    # gdb sleeps in its own python rather than in a shell child that could outlive it.
    gdb = e2e.gdb_start(*commands, f"shell touch {marker}", "python import time; time.sleep(60)", program=program)
    e2e.wait_for_file(marker)
    gdb.kill()


def test_once_server_kills_inferior_and_exits(e2e):
    program = e2e.program("basic")
    server = e2e.serve(program, options=("--once",))
    inferior = server.inferior_pid
    start_gdb_and_kill_it(e2e, server, program, server.remote, "break square", "continue")
    server.wait_exit()
    assert wait_until(lambda: not pid_alive(inferior)), "inferior outlived the server"


@pytest.mark.tpagent_only("gdbserver 13 waits for the running inferior to stop first")
def test_once_server_kills_running_inferior(e2e):
    """The same while the inferior runs and gdb waits in 'continue'. (gdbserver 13 only
    logs "client connection closed" here and waits until the inferior stops by itself.)"""
    program = e2e.program("spin")
    ready = e2e.tmp / "ready"
    server = e2e.serve(program, str(ready), options=("--once",))
    inferior = server.inferior_pid
    gdb = e2e.gdb_start(server.remote, "continue", program=program)
    e2e.wait_for_file(ready)
    gdb.kill()
    server.wait_exit()
    assert wait_until(lambda: not pid_alive(inferior)), "inferior outlived the server"


def test_default_server_keeps_inferior_for_next_gdb(e2e):
    program = e2e.program("basic")
    server = e2e.serve(program)
    inferior = server.inferior_pid
    start_gdb_and_kill_it(e2e, server, program, server.remote, "break square", "continue")

    server.wait_for_count(DISCONNECTED.pattern, 1)
    assert server.running() and pid_alive(inferior)
    # The new gdb finds the program where the old one left it, breakpoint removed.
    r = e2e.gdb(server.remote, "bt 1", "print v", "continue", program=program)
    assert_in_order(r.of("bt 1"), r"#0  square \(v=1\)")
    assert r.of("print v").strip() == "$1 = 1"
    assert_in_order(r.of("continue"), rf"\[Inferior 1 \(process {inferior}\) exited with code 03\]")
    assert server.wait_exit() == 0


@pytest.mark.parametrize("inferior_state", ["stopped", "none"])
def test_multi_server_keeps_listening(e2e, inferior_state):
    program = e2e.program("basic")
    server = e2e.serve_multi()
    commands = [server.extended_remote, f"set remote exec-file {program}"]
    if inferior_state == "stopped":
        commands += ["break square", "run"]
    start_gdb_and_kill_it(e2e, server, program, *commands)

    server.wait_for_count(DISCONNECTED.pattern, 1)
    assert server.running()
    r = e2e.gdb(
        server.extended_remote, f"set remote exec-file {program}", "run", "info inferiors", program=program
    )
    assert_in_order(r.of("run"), rf"\[Inferior 1 \(process {server.inferior_pids[-1]}\) exited with code 03\]")
    assert server.running()
