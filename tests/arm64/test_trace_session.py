"""A trace beyond one gdb session, on the arm64 board: disconnected tracing (the trace
outlives gdb's connection, a second gdb finds it running and reads its frames; with it off,
losing gdb stops the trace), and tsave -r (the stub writes the trace file on the board;
gdb-multiarch on the host reads it with target tfile exactly as the file gdb writes itself).

traced.c with 0 counted iterations and a stop file loops (10 ms a round, "tick N" printed
every 10 rounds) until the file exists on the board.
"""

import json
import os
import re
import signal
import subprocess
from pathlib import Path

import pytest

import shared
from harness import Server, wait_until
from scenario import TO_MAIN, parse_tdump, parse_tfind, parse_tstatus
from board import REPO, BoardFastTrace, BoardScenario

PROGRAM = "traced"
# tick lines come every 10 rounds: on the emulated board, each costs a tracepoint hit or so.
TICK_TIMEOUT = 60


def looping(arm64, fast: bool = False) -> tuple[BoardScenario, str]:
    """The looping traced.c (the in-process agent preloaded with FAST), and the gdb command
    that creates its stop file on the board."""
    stop_file = f"/tmp/{arm64.board.spawn_name()}.stop"
    scenario = BoardFastTrace if fast else BoardScenario
    return scenario(arm64, PROGRAM, "0", stop_file), arm64.board_command(f"touch {stop_file}")

FAST_ONLY = pytest.mark.tpagent_only("Debian's arm64 in-process agent crashes the programs it is loaded into")


def test_trace_runs_on_after_detach(arm64):
    """gdb starts the trace and detaches; a second gdb finds it running and reads it."""
    shared.trace_runs_on_after_detach(*looping(arm64), tick_timeout=TICK_TIMEOUT)


@FAST_ONLY
def test_fast_trace_runs_on_after_detach(arm64):
    """The same with a fast tracepoint: the in-process agent collects with no gdb and no
    stop, and the second gdb reads its frames."""
    shared.trace_runs_on_after_detach(*looping(arm64, fast=True), tick_timeout=TICK_TIMEOUT, fast=True)


def test_disconnect_stops_the_trace_when_off(arm64):
    """disconnected-tracing off: the trace stops when gdb disconnects."""
    shared.disconnect_stops_the_trace_when_off(BoardScenario(arm64, PROGRAM))


def test_trace_survives_gdb_being_killed(arm64):
    """disconnected-tracing on and gdb SIGKILLed while the program is stopped: the program
    stays stopped and the trace running; a new gdb finds both."""
    shared.trace_survives_gdb_being_killed(*looping(arm64))


def test_disconnect_leaves_the_program_where_it_stopped(arm64):
    """disconnected-tracing on, the program stopped at a breakpoint, gdb's `disconnect`: the
    next gdb finds it stopped there and the trace running."""
    shared.disconnect_leaves_the_program_where_it_stopped(*looping(arm64))


VIEW = ("tstatus", "info tracepoints", "info tvariables", "tfind 4", "tdump", "info registers pc x0 x1", "tfind end")


@pytest.mark.tpagent_only("gdbserver does not implement QTSave: 'Target does not support this command.'")
@pytest.mark.parametrize("fast", [False, True], ids=["trap", "fast"])
def test_tsave_r_on_the_board(arm64, fast):
    """tsave -r: tpagent writes the trace file on the board; fetched to the host, gdb-multiarch
    reads it exactly as it reads the file it writes itself with plain tsave. With a fast
    tracepoint too: its frames' register blocks are the core the pad saved plus tpidr."""
    s = (BoardFastTrace if fast else BoardScenario)(arm64, PROGRAM, "6")
    on_board, theirs = f"/tmp/{s.server.name}.tf", arm64.tmp / "host.tf"
    define = shared.hits_define(s, registers=True, fast=fast)
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


@FAST_ONLY
def test_recording_on_the_board(arm64):
    """--record on the board: a fast tracepoint's 200 frames go into files of 64 KiB there,
    rotated; fetched to the host, tpdump reads every frame of every file, the run's frames one
    after another across them, and gdb-multiarch opens the last with target tfile (its frames
    as its status says)."""
    tpdump = Path(os.environ.get("TPDUMP") or REPO / "build" / "default" / "bin" / "tpdump")
    if not tpdump.is_file():
        pytest.skip(f"no host tpdump at {tpdump} to read the board's files")
    folder = f"/tmp/{arm64.board.spawn_name()}.rec"
    s = BoardFastTrace(arm64, PROGRAM, "200", options=("--record", folder, "--record-size", "64K"))
    define = s.define(*shared.tracer(True)(s.at("record_first"), "collect $regs, iteration"))
    s.gdb(*TO_MAIN, define, "break finished", "tstart", "continue", "tstop", "tstatus")
    names = arm64.board.checked_run(f"ls {folder}").split()
    assert len(names) >= 3, names
    frames, first_expected = 0, 0
    for name in sorted(names):
        local = arm64.board.fetch_file(f"{folder}/{name}", arm64.tmp / name)
        dump = subprocess.run([str(tpdump), str(local)], capture_output=True, text=True, timeout=60)
        assert dump.returncode == 0, (name, dump.stderr)
        m = re.search(r"^recorded: file \d+ of its folder, the run's frames from (\d+) to (\d+);", dump.stdout, re.M)
        assert m and int(m.group(1)) == first_expected, dump.stdout[:1500]
        first_expected = int(m.group(2)) + 1
        frames += int(m.group(2)) - int(m.group(1)) + 1
    assert frames == 200
    # The folder, fetched, as one trace: the run's 200 frames in order.
    whole = subprocess.run([str(tpdump), "--json", "--registers", "none", str(arm64.tmp)], capture_output=True,
                           text=True, timeout=60)
    assert whole.returncode == 0, whole.stderr
    assert [json.loads(line)["frame"] for line in whole.stdout.splitlines() if '"frame"' in line] == list(range(200))
    last = int(m.group(2)) - int(m.group(1)) + 1
    t = s.gdb(f"target tfile {local}", "tstatus", "tfind start", connect=False)
    assert parse_tstatus(t.of("tstatus")).buffered == last, t.of("tstatus")
    assert parse_tfind(t.of("tfind start")) == (0, 1), t.of("tfind start")


@FAST_ONLY
def test_streaming_from_the_board(arm64):
    """--record-host on the board, `tpdump record` on the host through a forwarded port: a fast
    tracepoint's 200 frames reach the host's folder in files of 64 KiB, rotated as on the
    board; tpdump reads the folder as one run, the 200 frames in order."""
    tpdump = Path(os.environ.get("TPDUMP") or REPO / "build" / "default" / "bin" / "tpdump")
    if not tpdump.is_file():
        pytest.skip(f"no host tpdump at {tpdump} to receive the board's stream")
    host_port, board_port = arm64.board.next_stub()
    folder = arm64.tmp / "streamed"
    s = BoardFastTrace(arm64, PROGRAM, "200",
                       options=("--record-host", f"0.0.0.0:{board_port}", "--record-size", "64K"))
    tool = Server([str(tpdump), "record", f"127.0.0.1:{host_port}", str(folder)], arm64.reaper)
    tool.wait_for(r"streaming from operation 1", timeout=120)
    define = s.define(*shared.tracer(True)(s.at("record_first"), "collect $regs, iteration"))
    r = s.gdb(*TO_MAIN, define, "break finished", "tstart", "continue", "tstop", "tstatus")
    m = re.search(r"recorded 200 frame\(s\) into (\d+) file\(s\) in the host stream", r.of("tstatus"))
    assert m and int(m.group(1)) >= 3, r.of("tstatus")
    # The run ended at tstop: its last file ends on the host too.
    assert wait_until(lambda: len(re.findall(r"\.tf ended:", tool.output)) == int(m.group(1)), timeout=120), tool.output
    tool.proc.send_signal(signal.SIGTERM)
    assert tool.wait_exit() == 0, tool.output
    whole = subprocess.run([str(tpdump), "--json", "--registers", "none", str(folder)], capture_output=True,
                           text=True, timeout=60)
    assert whole.returncode == 0, whole.stderr
    frames = [json.loads(line) for line in whole.stdout.splitlines() if '"frame"' in line]
    assert [f["frame"] for f in frames] == list(range(200))
    iterations = [int.from_bytes(bytes.fromhex(f["memory"][0]["hex"]), "little") for f in frames]
    assert iterations == list(range(iterations[0], iterations[0] + 200)), iterations[:5]


@FAST_ONLY
def test_a_snapshot_on_the_board(arm64):
    """A trap tracepoint at halfway() as the snapshot trigger on the board (monitor snapshot
    dir, monitor snapshot trigger): its hit writes the circular buffer's window there, the
    fast tracepoint's frames up to that iteration then its own; tpdump reads it on the host."""
    tpdump = Path(os.environ.get("TPDUMP") or REPO / "build" / "default" / "bin" / "tpdump")
    if not tpdump.is_file():
        pytest.skip(f"no host tpdump at {tpdump} to read the board's file")
    folder = f"/tmp/{arm64.board.spawn_name()}.snap"
    s = BoardFastTrace(arm64, PROGRAM, "200")
    define = s.define(*shared.tracer(True)(s.at("record_first"), "collect iteration"),
                      "trace halfway", "actions", "collect halfway_seen", "end")
    r = s.gdb(*TO_MAIN, "set trace-buffer-size 16384", "set circular-trace-buffer on", define,
              f"monitor snapshot dir {folder}", "monitor snapshot trigger 3", "break finished", "tstart",
              "continue", "tstop", "monitor snapshot show")
    assert "1 written" in r.of("monitor snapshot show"), r.of("monitor snapshot show")
    local = arm64.board.fetch_file(f"{folder}/snapshot-000001.tf", arm64.tmp / "snapshot.tf")
    dump = subprocess.run([str(tpdump), "--json", "--registers", "none", str(local)], capture_output=True,
                          text=True, timeout=60)
    assert dump.returncode == 0, dump.stderr
    frames = [json.loads(line) for line in dump.stdout.splitlines()]
    assert len(frames) > 2 and frames[-1]["tracepoint"] == 3, frames[-2:]
    iterations = [int.from_bytes(bytes.fromhex(f["memory"][0]["hex"]), "little") for f in frames[:-1]]
    assert iterations == list(range(101 - len(iterations), 101)), iterations[-5:]
