"""The flight recorder (--record DIR): a trace run's frames go into rotating trace files in DIR
while the run goes on, the in-memory buffer only their way there. programs/ftrace_loop.c with
a fast tracepoint and a trap tracepoint collecting $regs: far more bytes of frames than the
buffer holds.
"""

import json
import os
import re
import signal
import subprocess
import time
from pathlib import Path

import pytest

from harness import pid_alive, wait_until
from scenario import (
    TO_MAIN,
    TO_THE_END,
    FastTrace,
    Scenario,
    every_call_recorded_or_counted,
    ftrace,
    parse_frames,
    parse_tstatus,
    trace,
    trace_to,
)

pytestmark = pytest.mark.tpagent_only("gdbserver has no recording")

PROGRAM = "ftrace_loop"
CALLS = 3000  # x 2 tracepoints x 1 to 3 KB a frame ($regs: the CPU's XSAVE state decides)
BUFFER = 1 << 20


def recorded(directory: Path) -> list[Path]:
    return sorted(directory.glob("trace-*.tf"))


def run(e2e, directory: Path, *options: str):
    s = Scenario(e2e, PROGRAM, str(CALLS), options=("--record", str(directory), *options))
    define = s.define(*ftrace("traced", "collect $regs, n"), *trace("leaf", "collect $regs"))
    r = s.gdb(*TO_MAIN, f"set trace-buffer-size {BUFFER}", define, *trace_to("finished"), *TO_THE_END)
    s.ends_as_natively(r.of("continue", 2))
    return s, r


def test_every_frame_is_in_the_files(e2e):
    """With every file kept: the files hold each of the 2 x CALLS frames exactly once, in
    collection order (traced(i) then leaf(i): rdi is i in both), though the buffer holds a
    fraction of them; each file ends whole and opens alone in gdb (target tfile)."""
    directory = e2e.tmp / "all"
    directory.mkdir()
    s, r = run(e2e, directory, "--record-size", "1M")
    files = recorded(directory)
    # (Measured, not assumed: the frames' size depends on the CPU's registers.)
    assert sum(f.stat().st_size for f in files) > 4 * BUFFER and len(files) >= 4, files
    walk = s.walk("$rdi")
    calls = []
    for f in files:
        t = s.gdb(f"target tfile {f}", walk, connect=False)
        calls += [row[2] for row in parse_frames(t.of(walk))]
    # tstatus says so, and that nothing was lost.
    note = r.of("tstatus")
    every_call_recorded_or_counted(calls, note, CALLS)
    assert f"frame(s) into {len(files)} file(s) in {directory}" in note, note
    assert "lost" not in note, note


def test_the_newest_files_are_kept(e2e):
    """--record-files 3: three files stay, the newest, the last of them holding the last
    call's frame."""
    directory = e2e.tmp / "three"
    directory.mkdir()
    s, r = run(e2e, directory, "--record-size", "256K", "--record-files", "3")
    files = recorded(directory)
    assert len(files) == 3, files
    assert "oldest removed" in r.of("tstatus"), r.of("tstatus")
    walk = s.walk("$rdi")
    t = s.gdb(f"target tfile {files[-1]}", walk, connect=False)
    assert parse_frames(t.of(walk))[-1][2] == CALLS - 1, t.of(walk)


def tpdump_text(path: Path, *options: str) -> subprocess.CompletedProcess:
    tool = Path(os.environ["TPAGENT_BIN"]).parent / "tpdump"
    return subprocess.run([str(tool), *options, str(path)], capture_output=True, text=True, timeout=60)


RECORDED = re.compile(r"^recorded: file (\d+) of its folder, the run's frames from (\d+) to (\d+);", re.M)


@pytest.mark.parametrize("sealer", ["tpdump", "tpagent"])
def test_files_cut_by_kill_9_open_and_seal(e2e, sealer):
    """tpagent SIGKILLed while it records a disconnected trace (traced.c, a fast tracepoint hit
    every 10 ms, files of 64 KiB): the newest file, cut, shows its whole frames in tpdump (which
    names the damage), and once sealed -- by tpdump --seal, or by tpagent started again on
    the same folder -- opens in gdb with those frames; the files together hold a run of frames
    without a gap (each file's status: the run's index of its first frame). The program runs on."""
    directory = e2e.tmp / "cut"
    stop = e2e.tmp / "stop"
    s = FastTrace(e2e, "traced", "0", str(stop), options=("--record", str(directory), "--record-size", "64K"))
    where = f"traced.c:{s.line('record_first') + 2}"
    s.gdb(*TO_MAIN, s.define(ftrace(where, "collect $regs, iteration")), "set disconnected-tracing on",
          "tstart", "detach")
    assert wait_until(lambda: len(recorded(directory)) >= 4, timeout=60), recorded(directory)
    pid = s.pid
    os.kill(s.server.pid, signal.SIGKILL)
    s.server.wait_exit()
    files = recorded(directory)
    newest = files[-1]
    cut = tpdump_text(newest)
    assert cut.returncode == 1 and "without the end-of-frames marker" in cut.stderr, (cut.returncode, cut.stderr)
    before_seal = int(re.search(r"(\d+) frames before the damage", cut.stdout).group(1))
    if sealer == "tpdump":
        sealed = tpdump_text(newest, "--seal")
        assert sealed.returncode == 0, sealed.stderr
        m = re.search(r"sealed: (\d+) whole frame\(s\) kept", sealed.stdout)
        assert m and int(m.group(1)) == before_seal, sealed.stdout
        again = tpdump_text(newest, "--seal")
        assert "not cut" in again.stdout, again.stdout
    else:
        stop2 = e2e.tmp / "stop2"
        again = e2e.serve(s.program, "0", str(stop2), options=("--record", str(directory)))
        again.wait_for(rf"^recording: {re.escape(str(newest))} was cut short; sealed: {before_seal} whole frame")
        stop2.touch()
    # Every file now whole, and the run's frames one after another across them.
    expected_first = None
    for f in files:
        dump = tpdump_text(f)
        assert dump.returncode == 0, (f, dump.stderr)
        m = RECORDED.search(dump.stdout)
        assert m, dump.stdout[:2000]
        first, last = int(m.group(2)), int(m.group(3))
        assert expected_first is None or first == expected_first, (f, first, expected_first)
        expected_first = last + 1
    # gdb opens the sealed file; its tstatus shows the seal's note.
    walk = s.walk("iteration")
    t = s.gdb(f"target tfile {newest}", walk, "tstatus", connect=False)
    iterations = [row[2] for row in parse_frames(t.of(walk))]
    assert len(iterations) == before_seal, t.of(walk)
    assert iterations == list(range(iterations[0], iterations[0] + len(iterations))), iterations
    assert "sealed after a cut" in t.of("tstatus"), t.of("tstatus")
    # The program runs on, and ends when told.
    stop.touch()
    assert wait_until(lambda: not pid_alive(pid), timeout=30)


def test_monitor_record_switches_recording(e2e):
    """Without --record, gdb switches recording on between runs: `monitor record DIR size 64K
    files 2` (refused with a size too small, and while a run goes on), then a run records into
    DIR, two files kept, tstatus saying so; `monitor record` alone says what is recorded;
    `monitor record off` ends it."""
    directory = e2e.tmp / "by-monitor"
    s = Scenario(e2e, PROGRAM, str(CALLS))
    on = f"monitor record {directory} size 64K files 2"
    r = s.gdb(
        *TO_MAIN, "monitor record", f"monitor record {directory} size 1", on,
        s.define(*trace("leaf", "collect $regs")), "break finished", "tstart", "monitor record off",
        "monitor record", "continue", "tstop", "tstatus", "monitor record off", "monitor record", *TO_THE_END,
    )
    assert "Not recording" in r.of("monitor record"), r.of("monitor record")
    assert "not 'size 1'" in r.of(f"monitor record {directory} size 1"), r.of(f"monitor record {directory} size 1")
    assert f"recorded into {directory} from the next tstart on" in r.of(on), r.of(on)
    assert "A trace is running" in r.of("monitor record off"), r.of("monitor record off")
    assert "This run: recorded" in r.of("monitor record", 1), r.of("monitor record", 1)
    files = recorded(directory)
    assert len(files) == 2, files
    note = r.of("tstatus")
    m = re.search(r"recorded (\d+) frame\(s\) into (\d+) file\(s\)", note)
    assert m and int(m.group(1)) == CALLS and int(m.group(2)) > 2 and "oldest removed" in note, note
    assert "not recorded from now on" in r.of("monitor record off", 1), r.of("monitor record off", 1)
    assert "Not recording" in r.of("monitor record", 2), r.of("monitor record", 2)
    s.ends_as_natively(r.of("continue", 2))


def test_every_frame_is_in_a_file_or_counted(e2e):
    """A fast tracepoint hit 200000 times as fast as the program can, through a buffer of 64
    KiB: the recording cannot take every frame as it comes, and each one it does not is counted
    (tstatus's notes). Frames in the files + frames counted = hits, exactly; tpdump reads every
    frame the notes say are recorded."""
    calls = 200000
    directory = e2e.tmp / "counted"
    s = Scenario(e2e, PROGRAM, str(calls), options=("--record", str(directory)), agent=True)
    r = s.gdb(*TO_MAIN, "set trace-buffer-size 65536", s.define(*ftrace("traced", "collect n")),
              *trace_to("finished"), "info tracepoints", *TO_THE_END)
    s.ends_as_natively(r.of("continue", 2))
    hits = int(re.search(r"already hit (\d+) time", r.of("info tracepoints")).group(1))
    assert hits == calls, r.of("info tracepoints")
    note = r.of("tstatus")
    recorded_frames = count_in(r"recorded (\d+) frame", note)
    not_recorded = sum(count_in(p, note) for p in (r"(\d+) lost", r"(\d+) not collected", r"(\d+) not written"))
    assert recorded_frames + not_recorded == hits, note
    in_files = 0
    for f in recorded(directory):
        dump = tpdump_text(f, "--json", "--registers", "none")
        assert dump.returncode == 0, (f, dump.stderr)
        in_files += len(dump.stdout.splitlines())
    assert in_files == recorded_frames, (in_files, note)


def count_in(pattern: str, text: str) -> int:
    m = re.search(pattern, text)
    return int(m.group(1)) if m else 0


def test_tpdump_reads_and_follows_a_recording(e2e):
    """tpdump --follow --json on the folder while a disconnected trace records into it
    (traced.c, a fast tracepoint hit every 10 ms, files of 64 KiB) prints every frame as it
    reaches the files, from the newest file on: consecutive iterations across the files, each
    file's beginning and, once it ended, what it held. Then tpdump reads the folder as one
    trace: every frame of the run, in order, each file's part marked."""
    directory = e2e.tmp / "followed"
    stop = e2e.tmp / "stop"
    s = FastTrace(e2e, "traced", "0", str(stop), options=("--record", str(directory), "--record-size", "64K"))
    where = f"traced.c:{s.line('record_first') + 2}"
    s.gdb(*TO_MAIN, s.define(ftrace(where, "collect iteration")), "set disconnected-tracing on", "tstart", "detach")
    tool = Path(os.environ["TPAGENT_BIN"]).parent / "tpdump"
    followed = e2e.tmp / "followed.jsonl"
    with open(followed, "w") as out:
        follower = subprocess.Popen([str(tool), "--follow", "--json", "--registers", "none", str(directory)], stdout=out)
        try:
            # Three files begun since the follower looked first (it may start late, on a loaded
            # machine).
            assert wait_until(lambda: followed.read_text().count('"file_begins"') >= 3, timeout=60), recorded(directory)
            stop.touch()
            assert wait_until(lambda: not pid_alive(s.pid), timeout=30)
            s.server.wait_for(r"ended during a disconnected trace")
            last = recorded(directory)[-1]
            # The follower has read the last file to its end (its frames, then its marker).
            assert wait_until(lambda: f'"file_begins":"{last}"' in followed.read_text(), timeout=30)
            size = -1
            while size != followed.stat().st_size:
                size = followed.stat().st_size
                time.sleep(1)
        finally:
            follower.kill()
            follower.wait()
    lines = [json.loads(line) for line in followed.read_text().splitlines()]
    iterations = [int.from_bytes(bytes.fromhex(f["memory"][0]["hex"]), "little") for f in lines if "frame" in f]
    assert len(iterations) > 20 and iterations == list(range(iterations[0], iterations[0] + len(iterations))), iterations[:5]
    begins = [line for line in lines if "file_begins" in line]
    ended = [line for line in lines if "file" in line]
    assert len(begins) >= 3 and len(ended) >= len(begins) - 1, (begins, ended)
    # A file's concluding line counts the frames printed since it began.
    for line in ended:
        start = next(b for b in begins if b["file_begins"] == line["file"])
        assert line["first_frame"] == start["first_frame"] and line["frames"] > 0, (line, start)

    # The folder as one trace: the run's frames from the first, each file's part before its own.
    whole = [json.loads(line) for line in tpdump_text(directory, "--json", "--registers", "none").stdout.splitlines()]
    parts = [line for line in whole if "file" in line]
    frames = [line for line in whole if "frame" in line]
    assert [p["file"] for p in parts] == [str(f) for f in recorded(directory)], parts
    assert [f["frame"] for f in frames] == list(range(len(frames))), frames[:3]
    run = [int.from_bytes(bytes.fromhex(f["memory"][0]["hex"]), "little") for f in frames]
    assert run == list(range(run[0], run[0] + len(run))) and set(iterations) <= set(run), (run[:5], iterations[:5])
    assert sum(p["frames"] for p in parts) == len(frames) and all(p["missing_before"] == 0 for p in parts), parts
    text = tpdump_text(directory, "--registers", "none").stdout
    assert f"folder: {len(parts)} file(s) of its newest run" in text, text[:2000]


def test_a_folder_that_cannot_be_written_loses_nothing_unseen(e2e):
    """--record names a regular file, not a folder: no file can be made there. The run goes on,
    the frames taken from the buffer counted as not written, tstatus saying why (and those the
    buffer had no room for between two takes, as not collected): every frame counted; the
    program ends as it would natively."""
    blocked = e2e.tmp / "not-a-folder"
    blocked.write_text("in the way\n")
    s, r = run(e2e, blocked)
    note = r.of("tstatus")
    assert f"recorded 0 frame(s) into 0 file(s) in {blocked}" in note, note
    assert f"not written; not writing now: cannot create {blocked}/trace-000001.tf" in note, note
    assert count_in(r"(\d+) not written", note) + count_in(r"(\d+) not collected", note) == 2 * CALLS, note
    assert blocked.read_text() == "in the way\n"


def test_the_program_killed_mid_recording_leaves_whole_files(e2e):
    """The program SIGKILLed while a disconnected trace records it (traced.c, files of 64
    KiB): tpagent ends the recording with the run; every file is whole (tpdump reads it to its
    end marker), and the frames in them are the ones tstatus says were recorded, from the
    first iteration on without a gap, none lost."""
    directory = e2e.tmp / "program-killed"
    stop = e2e.tmp / "stop"
    s = FastTrace(e2e, "traced", "0", str(stop), options=("--record", str(directory), "--record-size", "64K"))
    where = f"traced.c:{s.line('record_first') + 2}"
    s.gdb(*TO_MAIN, s.define(ftrace(where, "collect iteration")), "set disconnected-tracing on", "tstart", "detach")
    assert wait_until(lambda: len(recorded(directory)) >= 3, timeout=60), recorded(directory)
    os.kill(s.pid, signal.SIGKILL)
    s.server.wait_for(r"ended during a disconnected trace")
    r = s.gdb("tstatus")
    note = r.of("tstatus")
    m = re.search(r"recorded (\d+) frame\(s\) into (\d+) file\(s\)", note)
    assert m and "lost" not in note and "not written" not in note, note
    # Every frame the run collected is in a file.
    status = parse_tstatus(note)
    assert (status.created or status.collected) == int(m.group(1)), note
    iterations = []
    for f in recorded(directory):
        dump = tpdump_text(f, "--json", "--registers", "none")
        assert dump.returncode == 0, (f, dump.stderr)
        iterations += [int.from_bytes(bytes.fromhex(json.loads(line)["memory"][0]["hex"]), "little")
                       for line in dump.stdout.splitlines()]
    assert len(iterations) == int(m.group(1)) and int(m.group(2)) == len(recorded(directory)), (len(iterations), note)
    assert iterations == list(range(len(iterations))), iterations[:5]


def test_files_rotate_by_time_too(e2e):
    """`monitor record DIR interval 1`: traced.c hitting a fast tracepoint every 10 ms, far from
    the 64M size: a new file every second or so, each whole, the run's frames one after
    another across them."""
    directory = e2e.tmp / "by-time"
    stop = e2e.tmp / "stop"
    s = FastTrace(e2e, "traced", "0", str(stop))
    where = f"traced.c:{s.line('record_first') + 2}"
    on = f"monitor record {directory} interval 1"
    r = s.gdb(*TO_MAIN, on, s.define(ftrace(where, "collect iteration")), "set disconnected-tracing on", "tstart",
              "detach")
    assert "files of 65536 KiB or 1 s" in r.of(on), r.of(on)
    assert wait_until(lambda: len(recorded(directory)) >= 4, timeout=60), recorded(directory)
    stop.touch()
    s.server.wait_for(r"ended during a disconnected trace")
    files = recorded(directory)
    run = []
    for f in files:
        dump = tpdump_text(f, "--json", "--registers", "none")
        assert dump.returncode == 0, (f, dump.stderr)
        run += [int.from_bytes(bytes.fromhex(json.loads(line)["memory"][0]["hex"]), "little")
                for line in dump.stdout.splitlines()]
    assert run == list(range(len(run))) and len(run) > 4 * 20, run[:5]
