"""Faults: tpagent itself SIGKILLed. A program it traces must not go down with it, nor keep
tpagent's breakpoints and jumps in its code (the next breakpoint hit with no tracer would kill
it with SIGTRAP): tpagent's watchdog (process/linux/code_guard) puts the program's own bytes
back and lets it run on. A program it only started, tracing nothing in it, ends with it, as
with gdbserver (PTRACE_O_EXITKILL).
"""

import os
import signal
import subprocess

import pytest

from harness import pid_alive, wait_until
from scenario import (
    TO_MAIN, FastTrace, Scenario, agent_library, ftrace, program_bytes, record_reliability, symbol_addresses, trace
)

pytestmark = pytest.mark.tpagent_only("the watchdog restoring the code is tpagent's")

GUARD_LINE = r"^tpagent-guard: tpagent ended with its breakpoints or jumps in process (\d+): (\d+) place\(s\) restored; the process runs on$"

KILLED = "tpagent killed (SIGKILL) with a trace running: the program runs on, its code restored"


def looping(e2e, scenario=Scenario, **kwargs):
    """traced.c looping (10 ms a round) until its stop file exists; the scenario and the file."""
    stop = e2e.tmp / "stop"
    return scenario(e2e, "traced", "0", str(stop), **kwargs), stop


def read_code(pid: int, function: str) -> str:
    """A gdb command printing the first 64 bytes of FUNCTION (a tracepoint is past the
    prologue) from /proc/PID/mem, around the server (see Scenario.read_code)."""
    return f'eval "shell dd if=/proc/{pid}/mem bs=1 skip=%lu count=64 status=none | od -An -tx1", {function}'


def code_read_by_gdb(r, pid: int, names: list[str], nth: int = 0) -> dict[str, bytes]:
    """What the read_code commands of gdb session R printed, the NTH time, per function."""
    return {name: bytes.fromhex(r.of(read_code(pid, name), nth).replace(" ", "").replace("\n", ""))
            for name in names}


def code_now(s: Scenario, names: list[str], pid: int) -> dict[str, bytes]:
    """The same bytes, read by the test itself."""
    where = symbol_addresses(s.program, pid)
    if s.program.read_bytes()[16] == 2:  # ET_EXEC: the addresses nm gives are the ones
        out = subprocess.run(["nm", str(s.program)], capture_output=True, text=True, check=True).stdout
        where = {row.split()[2]: int(row.split()[0], 16) for row in out.splitlines() if len(row.split()) == 3}
    return {name: program_bytes(pid, where[name], 64) for name in names}


def kill_tpagent(s: Scenario) -> None:
    os.kill(s.server.pid, signal.SIGKILL)
    s.server.wait_exit()


@pytest.mark.parametrize("fast", [False, True], ids=["trap", "fast"])
def test_a_traced_program_outlives_a_killed_tpagent(e2e, fast):
    """A disconnected trace runs with two tracepoints: with FAST, a fast one hit every round
    (record_hit), else a trap one hit once at the start (halfway); and a trap one not reached
    yet (finished). tpagent is SIGKILLed: the watchdog says so, the code is the program's own
    again, and the program runs to its end, through finished, whose breakpoint would have
    killed it. (A trap tracepoint hit when tpagent dies is not tried: that thread is stopped
    for tpagent, and gets its SIGTRAP when tpagent's hold ends.)"""
    s, stop = looping(e2e, FastTrace if fast else Scenario)
    first = "record_hit" if fast else "halfway"
    # A fast tracepoint's jump replaces one instruction of 5 bytes or more: counter++'s load.
    where = f"traced.c:{s.line('record_first') + 2}" if fast else first
    names = [first, "finished"]
    reads = [read_code(s.pid, name) for name in names]
    r = s.gdb(
        *TO_MAIN, *reads,
        s.define((ftrace if fast else trace)(where, "collect $regs"), trace("finished", "collect result")),
        "set disconnected-tracing on", "tstart", *reads, "detach",
    )
    before, patched = code_read_by_gdb(r, s.pid, names, 0), code_read_by_gdb(r, s.pid, names, 1)
    assert all(patched[name] != before[name] for name in names), (patched, before)
    s.server.wait_for(r"^tick 20$")
    pid = s.pid
    kill_tpagent(s)
    m = s.server.wait_for(GUARD_LINE)
    assert int(m.group(1)) == pid and int(m.group(2)) >= 2, m.group(0)
    assert code_now(s, names, pid) == before
    # Still running: it ends when told, through finished.
    stop.touch()
    s.server.wait_for(r"^result=-?\d+ counter=\d+$")
    assert wait_until(lambda: not pid_alive(pid))
    record_reliability(KILLED, 1)


@pytest.mark.parametrize("breakpoint", [
    ("break finished",),
    # Its condition runs in the program, from a pad: a jump, not a breakpoint instruction.
    ("set breakpoint condition-evaluation target", "set breakpoint always-inserted on",
     "break record_hit if counter == -1"),
], ids=["breakpoint", "condition-in-the-program"])
def test_a_program_tracing_nothing_ends_with_tpagent(e2e, breakpoint):
    """No trace, a breakpoint in the program and gdb connected: the program tpagent started
    dies with it, as with gdbserver, and no line of the watchdog's."""
    s, _ = looping(e2e)
    marker = e2e.tmp / "gdb-reached-the-end"
    s.gdb_start(*TO_MAIN, *breakpoint, f"shell touch {marker}", "python import time; time.sleep(60)")
    e2e.wait_for_file(marker)
    pid = s.pid
    kill_tpagent(s)
    assert wait_until(lambda: not pid_alive(pid)), "the program outlived tpagent"
    assert "tpagent-guard" not in s.server.output


def test_an_attached_program_outlives_a_killed_tpagent(e2e):
    """A program tpagent attached to, a disconnected trace in it with a trap tracepoint not
    reached yet: tpagent's end leaves it running, its code its own, and it ends normally
    through the tracepoint's function."""
    stop = e2e.tmp / "stop"
    target = e2e.spawn(str(e2e.program("traced")), "0", str(stop))
    s = Scenario.attach(e2e, "traced", target.pid)
    read = read_code(target.pid, "finished")
    r = s.gdb(read, s.define(trace("finished", "collect result")), "set disconnected-tracing on", "tstart", read, "detach")
    before = code_read_by_gdb(r, target.pid, ["finished"], 0)
    assert code_read_by_gdb(r, target.pid, ["finished"], 1) != before
    kill_tpagent(s)
    m = s.server.wait_for(GUARD_LINE)
    assert int(m.group(1)) == target.pid, m.group(0)
    assert code_now(s, ["finished"], target.pid) == before
    stop.touch()
    assert target.wait(timeout=20) == 0
    record_reliability(KILLED, 1)


def test_the_agent_runs_a_breakpoint_left_behind(e2e):
    """A thread stopped at a breakpoint when tpagent dies gets its SIGTRAP once tpagent's hold
    ends. In a program with the in-process agent, that trap waits for the watchdog to put the
    instruction back and runs it (orphan_trap.c plays both parts, no tpagent involved); without
    the agent, SIGTRAP ends the program."""
    program = str(e2e.program("orphan_trap"))
    env = {**os.environ, "LD_PRELOAD": agent_library(e2e)}
    run = subprocess.run([program], env=env, capture_output=True, text=True, timeout=30)
    assert (run.returncode, run.stdout) == (0, "work=13\n"), run
    bare = subprocess.run([program], capture_output=True, text=True, timeout=30)
    assert bare.returncode == -signal.SIGTRAP, bare


def test_a_program_printing_dprintf_lines_outlives_a_killed_tpagent(e2e):
    """An agent dprintf formatted in a program tpagent attached to, left printing after gdb
    detached (persistent), in a tight loop that keeps its ring of lines full. tpagent
    SIGKILLed: the watchdog restores the code, and the program ends normally (a thread that
    finds the ring full with no tracer to empty it goes on, its line lost)."""
    target = e2e.spawn(str(e2e.program("cond_breaks")), "100000000")
    s = Scenario.attach(e2e, "cond_breaks", target.pid)
    s.gdb("set breakpoint always-inserted on", "set dprintf-style agent",
          'dprintf hot,"hot %ld\\n", n', "detach")
    s.server.wait_for(r"Persistent commands are present")
    s.server.wait_for(r"^hot \d+$")
    kill_tpagent(s)
    # (tpagent killed in the middle of writing its lines leaves the last one cut, and the
    # watchdog's line goes on after it.)
    m = s.server.wait_for(GUARD_LINE.removeprefix("^"))
    assert int(m.group(1)) == target.pid, m.group(0)
    assert target.wait(timeout=60) == 0

