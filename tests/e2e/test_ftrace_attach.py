"""Fast tracepoints in a process that was started without the in-process agent and attached
to: tpagent places the in-process agent's image (libtpagent-inproc-image.so) in it when the first
fast tracepoint needs it (tstart), unless --no-inject.

programs/ftrace_attachee.c: two workers call work() in a tight loop (hot in the traced
function when tpagent attaches), a reader thread waits in read() on a pipe and main in
usleep(): the injected call runs in a thread stopped inside a system call, which must restart
as it would have. Once gdb sets stop_now, the program wakes the reader, checks each worker's
sum and reports; detached, it must end normally.
"""

import re
from pathlib import Path

import pytest

from harness import compile_program
from scenario import ATTACHEE, ATTACHEE_REPORT, Scenario, ftrace, running_attachee, tracepoint_address

PROGRAM = ATTACHEE
LIBRARY = "libtpagent-inproc-image.so"
GOOD_REPORT = ATTACHEE_REPORT

pytestmark = pytest.mark.tpagent_only(
    "gdbserver traces fast only in a program started with libinproctrace.so preloaded"
)


def agent_mappings(pid: int) -> set[int]:
    """Where the process has the in-process agent's file mapped at offset 0."""
    maps = Path(f"/proc/{pid}/maps").read_text()
    return {int(m.group(1), 16) for m in re.finditer(rf"^([0-9a-f]+)-\S+ \S+ 0+ .*/{LIBRARY}$", maps, re.M)}


def trace_commands(s: Scenario) -> tuple[str, ...]:
    """A fast tracepoint at work() collecting registers and arguments, a trace run over two
    of main's ticks, and a look at its first frame."""
    return (
        s.define(ftrace("work", "collect $regs, id, round")),
        "tstart",
        "break ticked",
        "continue",
        "continue",
        "tstop",
        "tstatus",
        "tfind start",
        "print id",
        "print round",
        "info symbol $pc",
        "tfind none",
        "delete",
    )


def check_traced(r, commands: tuple[str, ...]) -> None:
    tracepoint_address(r.of(commands[0]), 1, fast=True, source=PROGRAM)
    assert r.of("tstart").strip() == "", r.of("tstart")
    status = r.status()
    assert status.collected and status.collected > 0, status
    assert r.found("tfind start") == (0, 1)
    assert r.value("print id") in ("0", "1")
    assert int(r.value("print round")) >= 0
    assert r.of("info symbol $pc").startswith("work + "), r.of("info symbol $pc")


def test_attach_ftrace_detach_and_attach_again(e2e):
    """Attached to a running multi-threaded PIE program: ftrace + tstart loads the agent,
    the workers' calls become frames (registers and arguments), and after detach the
    program runs on correctly. A second attach finds the agent loaded (mapped once) and
    traces again; then the program ends with its sums right and its reader's read intact."""
    target, report = running_attachee(e2e)
    assert agent_mappings(target.pid) == set()

    s = Scenario.attach(e2e, PROGRAM, target.pid)
    commands = trace_commands(s)
    r = s.gdb(*commands, "detach")
    check_traced(r, commands)
    first = agent_mappings(target.pid)
    assert len(first) == 1, first
    assert s.server.wait_exit() == 0
    assert target.poll() is None, "the program ended after the first detach"

    again = Scenario.attach(e2e, PROGRAM, target.pid)
    commands = trace_commands(again)
    r = again.gdb(*commands, "set var stop_now = 1", "detach")
    check_traced(r, commands)
    assert agent_mappings(target.pid) == first
    assert again.server.wait_exit() == 0
    assert target.wait(timeout=30) == 0
    assert report.read_text() == GOOD_REPORT


def test_no_inject_leaves_the_program_alone(e2e):
    """--no-inject: tstart fails, saying the agent is not in the program, and nothing is
    loaded into it."""
    target, report = running_attachee(e2e)
    s = Scenario(e2e, PROGRAM, server=e2e.serve_attach(target.pid, "--no-inject"))
    r = s.gdb("ftrace work", "tstart", "set var stop_now = 1", "detach")
    assert "in-process agent (libtpagent-inproc.so) is not loaded in the program" in r.of("tstart")
    assert agent_mappings(target.pid) == set()
    assert target.wait(timeout=30) == 0
    assert report.read_text() == GOOD_REPORT


def test_a_static_program_is_traced(e2e):
    """A statically linked program has no dynamic loader: tpagent places the agent's image in
    it itself, and it traces as a dynamic one does; detached, it ends with its sums right."""
    static = compile_program(e2e.programs.source(PROGRAM), e2e.tmp / "attachee_static", "-static",
                             "-I", str(e2e.programs.source(PROGRAM).parent))
    target, report = running_attachee(e2e, static)
    s = Scenario(e2e, PROGRAM, program=static, server=e2e.serve_attach(target.pid))
    commands = trace_commands(s)
    r = s.gdb(*commands, "set var stop_now = 1", "detach")
    check_traced(r, commands)
    assert target.wait(timeout=30) == 0
    assert report.read_text() == GOOD_REPORT


def test_extended_remote_attach(e2e):
    """--multi and gdb's `attach PID` (vAttach): the same."""
    target, report = running_attachee(e2e)
    s = Scenario.multi(e2e, PROGRAM)
    commands = trace_commands(s)
    r = s.gdb(f"attach {target.pid}", *commands, "set var stop_now = 1", "detach")
    check_traced(r, commands)
    assert len(agent_mappings(target.pid)) == 1 or target.poll() is not None
    assert target.wait(timeout=30) == 0
    assert report.read_text() == GOOD_REPORT
