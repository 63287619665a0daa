"""A trace beyond one gdb session, on the arm64 board: disconnected tracing (the trace
outlives gdb's connection, a second gdb finds it running and reads its frames; with it off,
losing gdb stops the trace), and tsave -r (the stub writes the trace file on the board;
gdb-multiarch on the host reads it with target tfile exactly as the file gdb writes itself).

traced.c with 0 counted iterations and a stop file loops (10 ms a round, "tick N" printed
every 10 rounds) until the file exists on the board.
"""

import pytest

from harness import DISCONNECTED, assert_in_order
from scenario import TO_MAIN, parse_tdump, parse_tfind, parse_tstatus, trace
from board import BoardScenario

PROGRAM = "traced"
# tick lines come every 10 rounds: on the emulated board, each costs a tracepoint hit or so.
TICK_TIMEOUT = 60


def looping(arm64) -> tuple[BoardScenario, str]:
    """The looping traced.c, and the gdb command that creates its stop file on the board."""
    stop_file = f"/tmp/{arm64.board.spawn_name()}.stop"
    return BoardScenario(arm64, PROGRAM, "0", stop_file), arm64.board_command(f"touch {stop_file}")


def test_trace_runs_on_after_detach(arm64):
    """gdb starts the trace and detaches; the program runs on, unwatched, hitting the
    tracepoint; a second gdb finds the trace running, stops it and reads its frames."""
    s, stop = looping(arm64)
    define = s.define(trace("record_hit", "collect iteration"))
    first = s.gdb(*TO_MAIN, define, "set disconnected-tracing on", "tstart", "detach")
    assert_in_order(first.of("detach"), rf"^\[Inferior 1 \(process {s.pid}\) detached\]$")

    # 40 rounds pass with no gdb at all.
    s.server.wait_for(r"^tick 40$", timeout=TICK_TIMEOUT)
    r = s.gdb(
        "tstatus", "info tracepoints", "tstop", "tstatus",
        "tfind start", "tdump", "tfind 30", "print iteration", "tfind none", stop, "continue",
    )
    # Connecting, gdb learns of the running trace and takes over the target's tracepoint.
    assert_in_order(
        r.of(s.connect),
        r"^Trace is already running on the target\.$",
        r"^Created tracepoint 1 for target's tracepoint 2 at 0x[0-9a-f]+\.$",
    )
    running = r.status()
    assert (running.running, running.on_disconnect) == (True, "continue"), running
    assert running.collected >= 40
    assert_in_order(
        r.of("info tracepoints"),
        r"^1\s+tracepoint\s+keep y\s+0x[0-9a-f]+ in record_hit at .*traced\.c:\d+$",
        r"^\s+collect iteration$",
        r"^\s+installed on target$",
    )
    assert r.status(1).stopped == "by a tstop command", r.status(1)
    r.dumped(1, 0, r"^iteration = 0$")
    assert r.found("tfind 30") == (30, 1)
    assert r.value("print iteration") == "30"
    # The trace is stopped and the program, still whole, runs to its end.
    s.exited(r.of("continue"), 0)


def test_disconnect_stops_the_trace_when_off(arm64):
    """disconnected-tracing off: the trace stops when gdb disconnects, and frames the
    program makes afterwards are not recorded."""
    s = BoardScenario(arm64, PROGRAM)
    define = s.define(trace("record_hit", "collect iteration"))
    s.gdb(
        *TO_MAIN, define, "set disconnected-tracing off", "break halfway", "tstart",
        "continue",  # record_hit 0..5 traced
        "disconnect",
    )
    s.server.wait_for(DISCONNECTED)
    r = s.gdb("tstatus", "break finished", "continue", "tstatus", "tfind 5", "print iteration", "tfind")
    assert "Trace is already running" not in r.of(s.connect)
    status = r.status()
    assert (status.stopped, status.collected, status.on_disconnect) == ("because of disconnection", 6, "stop"), status
    assert_in_order(r.of("continue"), r"Breakpoint 2, finished \(")
    assert r.status(1).collected == 6, r.status(1)
    assert r.value("print iteration") == "5"
    assert r.found("tfind") is None


@pytest.mark.tpagent_only("gdbserver leaves the stopped program stopped when gdb dies")
def test_trace_survives_gdb_being_killed(arm64):
    """disconnected-tracing on and gdb SIGKILLed while the program is stopped: the program is
    set running again, keeps tracing with no gdb, and a new gdb finds the trace running."""
    s, stop = looping(arm64)
    define = s.define(trace("record_hit", "collect iteration"))
    s.gdb_killed_after(*TO_MAIN, define, "set disconnected-tracing on", "tstart")
    s.server.wait_for(DISCONNECTED)
    s.server.wait_for(r"^tick 30$", timeout=TICK_TIMEOUT)
    r = s.gdb("tstatus", "tstop", "tfind 20", "print iteration", "tfind none", stop, "continue")
    assert_in_order(r.of(s.connect), r"^Trace is already running on the target\.$")
    assert r.status().running, r.status()
    assert r.value("print iteration") == "20"
    s.exited(r.of("continue"), 0)


VIEW = ("tstatus", "info tracepoints", "info tvariables", "tfind 4", "tdump", "info registers pc x0 x1", "tfind end")


@pytest.mark.tpagent_only("gdbserver does not implement QTSave: 'Target does not support this command.'")
def test_tsave_r_on_the_board(arm64):
    """tsave -r: tpagent writes the trace file on the board; fetched to the host, gdb-multiarch
    reads it exactly as it reads the file it writes itself with plain tsave."""
    s = BoardScenario(arm64, PROGRAM, "6")
    on_board, theirs = f"/tmp/{s.server.name}.tf", arm64.tmp / "host.tf"
    collect = ("collect $regs, iteration, current, table[1]@3", "teval $hits = $hits + 1", "collect $hits")
    define = s.define("tvariable $hits = 100", trace(s.at("record_first"), *collect))
    live = s.trace_and_save(define, f"tsave -r {on_board}", f"tsave {theirs}", anchor="record_hit")
    assert live.of(f"tsave -r {on_board}").strip() == "", live.of(f"tsave -r {on_board}")
    ours = arm64.board.fetch_file(on_board, arm64.tmp / "target.tf")
    assert ours.read_bytes().startswith(b"\x7fTRACE0\n")

    def view(trace_file):
        r = s.open_trace_file(trace_file, *VIEW, live=live)
        shown = {command: r.of(command) for command in VIEW}
        # Variables come in the order each writer keeps them: compare them as a set.
        shown["info tvariables"] = sorted(shown["info tvariables"].splitlines())
        return shown

    a, b = view(ours), view(theirs)
    assert a == b
    # And it is a real trace, not two empty views agreeing.
    assert parse_tstatus(a["tstatus"]).collected == 6, a["tstatus"]
    assert parse_tfind(a["tfind 4"]) == (4, 1)
    parse_tdump(a["tdump"]).shows(r"^x0\s+0x4\s+4$", r"^x1\s+0x3\s+3$", r"^iteration = 4$", r"^\$hits = 105$")
