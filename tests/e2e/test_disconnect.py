"""gdb dies mid-session (SIGKILL, so it says nothing to the server first).

--once: the server kills its inferior and exits. Default: it keeps the stopped
inferior and listens again, so a new gdb can carry on. --multi: it keeps listening.
"""

import pytest

from harness import DISCONNECTED, assert_in_order, pid_alive, wait_until
from scenario import Scenario


def test_once_server_kills_inferior_and_exits(e2e):
    s = Scenario(e2e, "basic", options=("--once",))
    inferior = s.pid
    s.gdb_killed_after("break square", "continue")
    s.server.wait_exit()
    assert wait_until(lambda: not pid_alive(inferior)), "inferior outlived the server"


@pytest.mark.tpagent_only("gdbserver 13 waits for the running inferior to stop first")
def test_once_server_kills_running_inferior(e2e):
    """The same while the inferior runs and gdb waits in 'continue'. (gdbserver 13 only
    logs "client connection closed" here and waits until the inferior stops by itself.)"""
    ready = e2e.tmp / "ready"
    s = Scenario(e2e, "spin", str(ready), options=("--once",))
    inferior = s.pid
    gdb = s.gdb_start("continue")
    e2e.wait_for_file(ready)
    gdb.kill()
    s.server.wait_exit()
    assert wait_until(lambda: not pid_alive(inferior)), "inferior outlived the server"


def test_default_server_keeps_inferior_for_next_gdb(e2e):
    s = Scenario(e2e, "basic")
    inferior = s.pid
    s.gdb_killed_after("break square", "continue")

    s.server.wait_for_count(DISCONNECTED.pattern, 1)
    assert s.server.running() and pid_alive(inferior)
    # The new gdb finds the program where the old one left it, breakpoint removed.
    r = s.gdb("bt 1", "print v", "continue")
    assert_in_order(r.of("bt 1"), r"#0  square \(v=1\)")
    assert r.of("print v").strip() == "$1 = 1"
    assert_in_order(r.of("continue"), rf"\[Inferior 1 \(process {inferior}\) exited with code 03\]")
    assert s.server.wait_exit() == 0


@pytest.mark.parametrize("inferior_state", ["stopped", "none"])
def test_multi_server_keeps_listening(e2e, inferior_state):
    s = Scenario.multi(e2e, "basic")
    s.gdb_killed_after(s.exec_file, *(["break square", "run"] if inferior_state == "stopped" else []))

    s.server.wait_for_count(DISCONNECTED.pattern, 1)
    assert s.server.running()
    r = s.gdb(s.exec_file, "run", "info inferiors")
    assert_in_order(r.of("run"), rf"\[Inferior 1 \(process {s.server.inferior_pids[-1]}\) exited with code 03\]")
    assert s.server.running()
