"""Snapshots, the flight recorder's trigger: the frames a circular buffer holds -- the run's
last stretch -- written into a new trace file while the trace goes on, on `monitor snapshot`,
on SIGUSR1 to tpagent, or at a trigger tracepoint's hit. programs/ftrace_loop.c: a fast
tracepoint at traced(n) collecting n, through a buffer of 64 KiB that holds a fraction of
the run's frames.
"""

import os
import re
import signal
import time
from pathlib import Path

import pytest

from harness import pid_alive, wait_until
from scenario import TO_MAIN, TO_THE_END, FastTrace, Scenario, ftrace, parse_frames, parse_tstatus, tpdump, trace

pytestmark = pytest.mark.tpagent_only("gdbserver has no snapshots")

PROGRAM = "ftrace_loop"
CALLS = 6000
BUFFER = ("set trace-buffer-size 65536", "set circular-trace-buffer on")


def snapshots(directory: Path) -> list[Path]:
    return sorted(directory.glob("snapshot-*.tf"))


def test_monitor_snapshot_writes_the_window(e2e):
    """--snapshot-dir: `monitor snapshot` at the end of a run writes what the buffer holds,
    the newest frames, consecutive calls up to the last; gdb's target tfile opens the file,
    its status counting them and its note saying what triggered it. The run goes on."""
    directory = e2e.tmp / "snaps"
    s = Scenario(e2e, PROGRAM, str(CALLS), options=("--snapshot-dir", str(directory)), agent=True)
    r = s.gdb(*TO_MAIN, *BUFFER, s.define(ftrace("traced", "collect n")), "break finished", "tstart",
              "continue", "monitor snapshot", "tstatus", "monitor snapshot show", "tstop", *TO_THE_END)
    s.ends_as_natively(r.of("continue", 2))
    files = snapshots(directory)
    assert [f.name for f in files] == ["snapshot-000001.tf"], files
    said = re.search(r"Snapshot of (\d+) frame\(s\) written to (\S+)\.", r.of("monitor snapshot"))
    assert said and said.group(2) == str(files[0]), r.of("monitor snapshot")
    live = parse_tstatus(r.of("tstatus"))
    assert live.running and int(said.group(1)) == live.frames < CALLS, (said.group(1), r.of("tstatus"))
    assert "1 snapshot(s) written into" in r.of("tstatus"), r.of("tstatus")
    assert "1 written; the newest is" in r.of("monitor snapshot show"), r.of("monitor snapshot show")
    walk = s.walk("$rdi")  # PIE: gdb reads the file without the run's addresses
    t = s.gdb(f"target tfile {files[0]}", "tstatus", walk, connect=False)
    calls = [row[2] for row in parse_frames(t.of(walk))]
    assert len(calls) == live.frames, (len(calls), live.frames)
    assert calls == list(range(CALLS - len(calls), CALLS)), calls[:5]
    assert "snapshot 1 (monitor snapshot): the newest" in t.of("tstatus"), t.of("tstatus")


def test_a_trap_tracepoint_triggers_a_snapshot_at_its_hit(e2e):
    """`monitor snapshot trigger 2`, tracepoint 2 a trap tracepoint at halfway(): its hit,
    halfway through the run, writes the window that ends there -- traced(n)'s frames up to
    the call before, then tracepoint 2's own -- once (count 1), though the run goes on to
    fill the buffer again. Refused first without a folder, then given one by monitor."""
    directory = e2e.tmp / "triggered"
    s = Scenario(e2e, PROGRAM, str(CALLS), agent=True)
    r = s.gdb(*TO_MAIN, "monitor snapshot", f"monitor snapshot dir {directory}", *BUFFER,
              s.define(ftrace("traced", "collect n"), trace("halfway", "collect $regs")),
              "monitor snapshot trigger 3", "monitor snapshot trigger x", *("break finished", "tstart", "continue"),
              "monitor snapshot show", "tstop", *TO_THE_END)
    s.ends_as_natively(r.of("continue", 2))
    assert "no folder for snapshots" in r.of("monitor snapshot"), r.of("monitor snapshot")
    assert "Tracepoint 3's hits write a snapshot, 1 a run at most" in r.of("monitor snapshot trigger 3")
    assert "monitor snapshot [dir DIR" in r.of("monitor snapshot trigger x"), r.of("monitor snapshot trigger x")
    assert "(1 this run)" in r.of("monitor snapshot show"), r.of("monitor snapshot show")
    files = snapshots(directory)
    assert len(files) == 1, files
    walk = s.walk("$rdi")
    t = s.gdb(f"target tfile {files[0]}", "tstatus", walk, connect=False)
    frames = parse_frames(t.of(walk))
    # (target tfile numbers the file's tracepoints 1 and 2.)
    assert frames and [row[1] for row in frames] == [1] * (len(frames) - 1) + [2], frames[-3:]
    calls = [row[2] for row in frames[:-1]]
    assert calls == list(range(CALLS // 2 - len(calls), CALLS // 2)), calls[-5:]
    assert "(tracepoint 3 hit)" in t.of("tstatus"), t.of("tstatus")


def test_sigusr1_writes_a_snapshot_without_gdb(e2e):
    """A disconnected trace (traced.c: a fast tracepoint hit every 10 ms) and no gdb: each
    SIGUSR1 to tpagent writes a snapshot; --snapshot-files 2 keeps the newest two; each
    opens in tpdump, its frames consecutive iterations. tpagent and the program go on."""
    directory = e2e.tmp / "by-signal"
    stop = e2e.tmp / "stop"
    s = FastTrace(e2e, "traced", "0", str(stop), options=("--snapshot-dir", str(directory), "--snapshot-files", "2"))
    where = f"traced.c:{s.line('record_first') + 2}"
    s.gdb(*TO_MAIN, s.define(ftrace(where, "collect iteration")), "set disconnected-tracing on", "tstart", "detach")
    for n in range(1, 4):
        time.sleep(0.3)  # frames between two snapshots
        os.kill(s.server.pid, signal.SIGUSR1)
        s.server.wait_for(rf"^snapshot \(SIGUSR1\): \d+ frame\(s\) into .*snapshot-{n:06}\.tf")
    files = snapshots(directory)
    assert [f.name for f in files] == ["snapshot-000002.tf", "snapshot-000003.tf"], files
    counts = []
    for f in files:
        frames = tpdump(f, "--registers", "none")
        iterations = [int.from_bytes(bytes.fromhex(frame["memory"][0]["hex"]), "little") for frame in frames]
        assert iterations and iterations == list(range(iterations[0], iterations[0] + len(iterations))), f
        counts.append(len(frames))
    assert counts[0] < counts[1], counts  # the buffer, not full, held more at the later one
    assert pid_alive(s.server.pid) and pid_alive(s.pid)
    stop.touch()
    assert wait_until(lambda: not pid_alive(s.pid), timeout=30)
