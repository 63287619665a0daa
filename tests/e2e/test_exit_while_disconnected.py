"""The program ends while gdb is away during a disconnected trace: the trace outlives it. A new
gdb connects (target remote or extended-remote) to a stopped stand-in of the program's main
thread, finds the trace stopped, and reads, dumps and saves its frames; `continue` then says
how the program ended. With --save-dir the trace also goes to a file at once.

gdbserver exits when the last process ends with no gdb connected ("Child exited with status 0",
exit status 0): the trace goes with it, so these are tpagent's own.
"""

import os
import re
import signal

import pytest

from harness import DISCONNECTED, assert_in_order, pid_alive, wait_until
from scenario import TO_MAIN, Scenario, trace

pytestmark = pytest.mark.tpagent_only("gdbserver exits when the program ends during a disconnected trace")

PROGRAM = "traced"
ITERATIONS = 5  # record_hit(0..4): one frame each
KEPT = r"^Process \d+ ended during a disconnected trace; the trace is kept for gdb$"
SAVED = r"^Trace saved to (.*/tpagent-(\d+)-\d{8}-\d{6}\.tf)$"


def traced(e2e, *args: str, options: tuple[str, ...] = ()) -> Scenario:
    """traced.c: ITERATIONS calls of record_hit, then it exits (with a stop file: it loops on
    until the file exists)."""
    return Scenario(e2e, PROGRAM, *(args or (str(ITERATIONS),)), options=options)


def start_disconnected_trace(s: Scenario, location: str = "record_hit"):
    """gdb to main, a tracepoint at LOCATION (in record_hit) collecting `iteration`,
    disconnected tracing on, tstart, detach. The result anchors the program's symbols
    (print/x) for Scenario.open_trace_file."""
    define = s.define(trace(location, "collect iteration"))
    return s.gdb(*TO_MAIN, define, "print/x &record_hit", "set disconnected-tracing on", "tstart", "detach")


def ends_unwatched(s: Scenario, how: str = r"Child exited with status 0") -> None:
    """The program ends with no gdb, and the server keeps its trace."""
    s.server.wait_for(rf"^{how}$")
    s.server.wait_for(KEPT)
    assert s.server.running()
    assert wait_until(lambda: not pid_alive(s.pid)), "the program is still there"


def frames_are_the_runs(r, walk: str) -> None:
    """The frames hold record_hit's ITERATIONS calls, in order, under gdb's tracepoint 1."""
    assert r.frames(walk) == [(k, 1, k) for k in range(ITERATIONS)]


@pytest.mark.parametrize("mode", ["remote", "extended-remote"])
def test_a_new_gdb_reads_the_trace(e2e, mode):
    s = traced(e2e)
    first = start_disconnected_trace(s)
    assert_in_order(first.of("detach"), rf"^\[Inferior 1 \(process {s.pid}\) detached\]$")
    ends_unwatched(s)

    on_host, on_target = e2e.tmp / "host.tf", e2e.tmp / "target.tf"
    walk = s.walk("iteration")
    connect = s.server.remote if mode == "remote" else s.server.extended_remote
    r = s.gdb(
        connect, "info threads", "tstatus", "tfind 3", "print iteration", "tdump", walk,
        f"tsave {on_host}", f"tsave -r {on_target}", "tfind none", "continue", connect=False,
    )
    # A stopped thread with nothing but a zero pc to show, and the trace's tracepoint.
    assert_in_order(
        r.of(connect),
        r"^Created tracepoint 1 for target's tracepoint 2 at 0x[0-9a-f]+\.$",
    )
    assert re.search(r"^0x0+ in \?\? \(\)$", r.of(connect), re.M), r.of(connect)
    assert_in_order(r.of("info threads"), rf'^\* 1\s+Thread {s.pid}\.{s.pid} "traced \(exited\)" ')
    status = r.trace_stopped("by an error", ITERATIONS)
    assert_in_order(r.of("tstatus"),
                    rf"^Trace stopped by an error \(process {s.pid} exited with status 0\)\.$")
    assert not status.running
    assert r.found("tfind 3") == (3, 1)
    assert r.value("print iteration") == "3"
    r.dumped(1, 3, r"^iteration = 3$")
    frames_are_the_runs(r, walk)
    assert r.of(f"tsave {on_host}").strip() == "" and r.of(f"tsave -r {on_target}").strip() == "", r
    # Resumed, it tells how the program ended.
    s.exited(r.of("continue"), 0)
    assert s.server.wait_exit() == 0

    # Both saved files are the trace, as gdb reads trace files.
    for saved in (on_host, on_target):
        t = s.open_trace_file(saved, "tstatus", "tfind 4", "print iteration", live=first)
        assert t.status().collected == ITERATIONS, t.status()
        assert t.value("print iteration") == "4"


def test_it_waits_for_the_gdb_that_takes_it(e2e):
    """A gdb that only looks and disconnects leaves the trace for the next; `kill` ends it."""
    s = traced(e2e)
    start_disconnected_trace(s)
    ends_unwatched(s)
    looked = s.gdb("tstatus", "disconnect")
    assert looked.status().collected == ITERATIONS
    s.server.wait_for_count(DISCONNECTED.pattern, 2)
    assert s.server.running()

    r = s.gdb("tfind 4", "print iteration", "tfind none", "kill")
    assert r.value("print iteration") == "4"
    assert_in_order(r.of("kill"), rf"^\[Inferior 1 \(process {s.pid}\) killed\]$")
    assert s.server.wait_exit() == 0


@pytest.mark.parametrize("leaving", ["detach", "killed"])
def test_once_waits_for_the_gdb_that_reads_it(e2e, leaving):
    """--once: the first gdb left (detached, or SIGKILLed) with the trace going on, so the
    server stays up for the next one, and that one is the last. A detach lets the program run
    on (it may end before or after the first connection is closed); gdb's death leaves it
    stopped, as gdbserver does, for the next gdb to run."""
    s = traced(e2e, options=("--once",))
    if leaving == "detach":
        start_disconnected_trace(s)
        ends_unwatched(s)
        r = s.gdb("tstatus", "tfind 2", "print iteration", "disconnect")
        assert r.status().collected == ITERATIONS, r.status()
        assert r.value("print iteration") == "2"
    else:
        define = s.define(trace("record_hit", "collect iteration"))
        s.gdb_killed_after(*TO_MAIN, define, "set disconnected-tracing on", "tstart")
        r = s.gdb("tstatus", "continue")
        status = r.status()
        assert (status.running, status.collected) == (True, 0), status
        s.exited(r.of("continue"), 0)
    assert s.server.wait_exit() == 0


def test_death_by_a_signal_is_reported_after_the_trace(e2e):
    stop_file = e2e.tmp / "stop"
    s = traced(e2e, "0", str(stop_file))  # loops until killed: the stop file never comes
    start_disconnected_trace(s)
    s.server.wait_for(r"^tick 20$")
    os.kill(s.pid, signal.SIGTERM)
    ends_unwatched(s, r"Child terminated with signal = 0xf \(SIGTERM\)")

    r = s.gdb("tstatus", "tfind 10", "print iteration", "tfind none", "continue")
    assert r.status().collected >= 20, r.status()
    assert r.value("print iteration") == "10"
    assert_in_order(
        r.of("continue"), r"^Program terminated with signal SIGTERM, Terminated\.$", r"^The program no longer exists\.$"
    )
    assert s.server.wait_exit() == 0


def test_save_dir_gets_the_trace_when_the_program_ends(e2e):
    """--save-dir: for a board nobody may come back to, the trace goes to a file in it too."""
    save_dir = e2e.tmp / "traces"
    save_dir.mkdir()
    s = traced(e2e, options=("--save-dir", str(save_dir)))
    # By line: gdb reading the file finds the tracepoint there without the program's code.
    first = start_disconnected_trace(s, s.at("record_first"))
    ends_unwatched(s)
    saved = s.server.wait_for(SAVED)
    path, pid = saved.group(1), int(saved.group(2))
    assert (pid, os.path.dirname(path)) == (s.pid, str(save_dir)), saved.group(0)
    assert [p.name for p in save_dir.iterdir()] == [os.path.basename(path)]  # no temporary file left

    t = s.open_trace_file(path, "tstatus", "tfind 2", "print iteration", "tdump", live=first)
    assert t.status().collected == ITERATIONS, t.status()
    assert t.value("print iteration") == "2"
    t.dumped(1, 2, r"^iteration = 2$")
