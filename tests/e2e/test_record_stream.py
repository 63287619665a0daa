"""The record stream (tpagent --record-host PORT): a trace run's recording goes over TCP to
`tpdump record BOARD:PORT DIR` on a host, which makes the same rotating trace files in DIR.
programs/ftrace_loop.c with a fast and a trap tracepoint collecting $regs, as test_record.py:
far more bytes of frames than the trace buffer holds. The link is cut, the host tool killed
and started again: every frame reaches DIR once, in collection order (or is counted as not
collected, the buffer full before the recorder drained it), and each file opens in gdb
(target tfile)."""

import json
import os
import re
import signal
import socket
import subprocess
import threading
from pathlib import Path

import pytest

from harness import Server, wait_until
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
CALLS = 3000
BUFFER = 1 << 20
STREAM_PORT = re.compile(r"^Record stream on port (\d+)", re.M)


def recorded(directory: Path) -> list[Path]:
    return sorted(directory.glob("trace-*.tf"))


def tpdump() -> str:
    return str(Path(os.environ["TPAGENT_BIN"]).parent / "tpdump")


def host_tool(e2e, port: int, directory: Path) -> Server:
    return Server([tpdump(), "record", f"127.0.0.1:{port}", str(directory)], e2e.reaper)


def stop_host_tool(tool: Server) -> str:
    tool.proc.send_signal(signal.SIGTERM)
    assert tool.wait_exit() == 0, tool.output
    return tool.output


class LinkCutter:
    """A TCP relay between the host tool and the board that cuts the link (both sockets shut
    down, as a dropped connection would be seen) each time `every` bytes went from the board
    through it, `cuts` times in all."""

    def __init__(self, board_port: int, every: int, cuts: int) -> None:
        self.board_port, self.every, self.cuts_left, self.cuts = board_port, every, cuts, 0
        self.listener = socket.create_server(("127.0.0.1", 0))
        self.port = self.listener.getsockname()[1]
        self.forwarded = 0
        threading.Thread(target=self._serve, daemon=True).start()

    def _serve(self) -> None:
        while True:
            try:
                host, _ = self.listener.accept()
            except OSError:
                return
            try:
                board = socket.create_connection(("127.0.0.1", self.board_port))
            except OSError:  # the board gone
                host.close()
                continue
            threading.Thread(target=self._pump, args=(board, host, True), daemon=True).start()
            threading.Thread(target=self._pump, args=(host, board, False), daemon=True).start()

    def _pump(self, src: socket.socket, dst: socket.socket, from_board: bool) -> None:
        since_cut = 0
        try:
            while data := src.recv(65536):
                dst.sendall(data)
                if from_board:
                    since_cut += len(data)
                    if since_cut >= self.every and self.cuts_left > 0:
                        self.cuts_left -= 1
                        self.cuts += 1
                        break
        except OSError:
            pass
        for s in (src, dst):
            try:
                s.shutdown(socket.SHUT_RDWR)
            except OSError:
                pass
            s.close()

    def close(self) -> None:
        self.listener.close()


def streamed_run(e2e, *options: str):
    s = Scenario(e2e, PROGRAM, str(CALLS), options=("--record-host", ":0", *options))
    port = int(s.server.wait_for(STREAM_PORT).group(1))
    return s, port


def define_and_run(s: Scenario):
    define = s.define(*ftrace("traced", "collect $regs, n"), *trace("leaf", "collect $regs"))
    r = s.gdb(*TO_MAIN, f"set trace-buffer-size {BUFFER}", define, *trace_to("finished"), "info tracepoints",
              *TO_THE_END)
    s.ends_as_natively(r.of("continue", 2))
    return r


def calls_in(s: Scenario, files: list[Path]) -> list[int]:
    walk = s.walk("$rdi")
    calls = []
    for f in files:
        t = s.gdb(f"target tfile {f}", walk, connect=False)
        calls += [row[2] for row in parse_frames(t.of(walk))]
    return calls


def test_every_frame_reaches_the_host(e2e):
    """The host tool connected from the start: the files it makes hold each of the 2 x CALLS
    frames once, in collection order, rotated at --record-size; tstatus says where they went;
    tpagent, at its end, hands the host the run's last operations before it exits. A second
    host tool meanwhile is turned away."""
    directory = e2e.tmp / "host"
    s, port = streamed_run(e2e, "--record-size", "1M")
    tool = host_tool(e2e, port, directory)
    tool.wait_for(r"streaming from operation 1")
    # One host at a time: a second is turned away, the first streams on.
    second = host_tool(e2e, port, e2e.tmp / "second")
    s.server.wait_for(r"^Refused a record stream connection from host 127\.0\.0\.1, port \d+: streaming to host")
    stop_host_tool(second)
    r = define_and_run(s)
    s.server.wait_exit()
    assert "no host has kept" not in s.server.output, s.server.output
    tool.wait_for(r"link ended: the board closed the link")
    out = stop_host_tool(tool)
    assert not list((e2e.tmp / "second").glob("trace-*.tf"))
    files = recorded(directory)
    assert len(files) >= 4 and sum(f.stat().st_size for f in files) > 4 * BUFFER, files
    note = r.of("tstatus")
    every_call_recorded_or_counted(calls_in(s, files), note, CALLS)
    assert f"frame(s) into {len(files)} file(s) in the host stream on port {port}" in note, note
    assert "lost" not in note, note
    assert len(re.findall(r"trace-\d+\.tf ended", out)) == len(files), out


def test_the_stream_survives_link_cuts_and_a_killed_host_tool(e2e):
    """The link cut 10 times while the run goes on, and the host tool SIGKILLed once and started
    again on the same folder: the files still hold every frame once, in order (the board sends
    again from the operation after the last one the host kept). A second tpagent on the same
    folder (a new stream) goes on after the first one's files."""
    directory = e2e.tmp / "cut"
    s, port = streamed_run(e2e, "--record-size", "512K", "--record-backlog", "64M")
    cutter = LinkCutter(port, every=300_000, cuts=10)
    tool = host_tool(e2e, cutter.port, directory)
    tool.wait_for(r"streaming from operation 1")
    killer_done = threading.Event()

    def kill_the_host_tool_once():
        nonlocal tool
        if wait_until(lambda: cutter.cuts >= 5, timeout=120):
            os.kill(tool.pid, signal.SIGKILL)
            tool.wait_exit()
            tool = host_tool(e2e, cutter.port, directory)
        killer_done.set()

    threading.Thread(target=kill_the_host_tool_once, daemon=True).start()
    r = define_and_run(s)
    s.server.wait_exit()
    assert killer_done.wait(60)
    assert "no host has kept" not in s.server.output, s.server.output
    assert cutter.cuts == 10, cutter.cuts
    assert len(re.findall(r"^Record stream to host", s.server.output, re.M)) >= 11, s.server.output
    tool.wait_for(r"link ended: the board closed the link")
    out = stop_host_tool(tool)
    cutter.close()
    assert "no longer on the board" not in out, out
    files = recorded(directory)
    every_call_recorded_or_counted(calls_in(s, files), r.of("tstatus"), CALLS)
    for f in files:  # each whole: no file left cut by the cuts
        assert s.gdb(f"target tfile {f}", "tstatus", connect=False).of("tstatus"), f

    # Another tpagent: a new stream, its files after these.
    first = len(files)
    s2, port2 = streamed_run(e2e, "--record-size", "1M")
    tool = host_tool(e2e, port2, directory)
    tool.wait_for(r"a new stream \(\w+\): its files go on after trace-%06d\.tf" % first)
    r2 = define_and_run(s2)
    s2.server.wait_exit()
    tool.wait_for(r"link ended: the board closed the link")
    stop_host_tool(tool)
    later = recorded(directory)[first:]
    assert later
    every_call_recorded_or_counted(calls_in(s2, later), r2.of("tstatus"), CALLS)


def count_in(pattern: str, text: str) -> int:
    m = re.search(pattern, text)
    return int(m.group(1)) if m else 0


def test_frames_wait_while_no_host_is_there(e2e):
    """No host during the run, a backlog of 1 MiB and a trace buffer of 64 KiB: once the backlog
    is full, frames wait in the buffer, and those it cannot hold are counted as not collected.
    At its end tpagent waits for a host, and one that comes then gets everything the board
    held: hits = frames in its files + frames counted, exactly."""
    directory = e2e.tmp / "late"
    s, port = streamed_run(e2e, "--record-backlog", "1M")
    define = s.define(*ftrace("traced", "collect $regs, n"), *trace("leaf", "collect $regs"))
    r = s.gdb(*TO_MAIN, "set trace-buffer-size 65536", define, *trace_to("finished"), "info tracepoints",
              *TO_THE_END)
    s.ends_as_natively(r.of("continue", 2))
    s.server.wait_for(r"^Record stream: waiting for a host to take the last \d+ KiB")
    tool = host_tool(e2e, port, directory)
    s.server.wait_exit()
    assert "no host has kept" not in s.server.output, s.server.output
    tool.wait_for(r"link ended: the board closed the link")
    stop_host_tool(tool)
    # Every call hit both tracepoints, a trap tracepoint's dropped frames counted as hits too.
    hits = sum(int(n) for n in re.findall(r"already hit (\d+) time", r.of("info tracepoints")))
    assert hits == 2 * CALLS, r.of("info tracepoints")
    note = r.of("tstatus")
    recorded_frames = count_in(r"recorded (\d+) frame", note)
    not_recorded = sum(count_in(p, note) for p in (r"(\d+) lost", r"(\d+) not collected", r"(\d+) not written"))
    assert count_in(r"(\d+) not collected", note) > 0 and recorded_frames + not_recorded == hits, note
    total = sum(
        parse_tstatus(s.gdb(f"target tfile {f}", "tstatus", connect=False).of("tstatus")).frames
        for f in recorded(directory)
    )
    assert total == recorded_frames, (total, note)


def test_tpdump_follows_a_board(e2e):
    """tpdump --follow --json BOARD:PORT, while a disconnected trace streams (traced.c, a fast
    tracepoint hit every 10 ms, files of 64 KiB): it prints the frames as they come, one run of
    consecutive iterations across files, and at SIGINT it ends and leaves no folder behind."""
    stop = e2e.tmp / "stop"
    temp = e2e.tmp / "follow-tmp"
    temp.mkdir()
    s = FastTrace(e2e, "traced", "0", str(stop), options=("--record-host", ":0", "--record-size", "64K"))
    port = int(s.server.wait_for(STREAM_PORT).group(1))
    where = f"traced.c:{s.line('record_first') + 2}"
    s.gdb(*TO_MAIN, s.define(ftrace(where, "collect iteration")), "set disconnected-tracing on", "tstart", "detach")
    followed = e2e.tmp / "followed.jsonl"
    with open(followed, "w") as out:
        follower = subprocess.Popen(
            [tpdump(), "--follow", "--json", "--registers", "none", f"127.0.0.1:{port}"], stdout=out,
            stderr=subprocess.PIPE, text=True, env={**os.environ, "TMPDIR": str(temp)},
        )
        try:
            assert wait_until(lambda: followed.read_text().count('"file_begins"') >= 3, timeout=60)
            assert len(list(temp.iterdir())) == 1, list(temp.iterdir())  # the stream's folder
        finally:
            follower.send_signal(signal.SIGINT)
            _, err = follower.communicate(timeout=30)
    stop.touch()
    assert follower.returncode == 0, err
    assert "streaming from operation 1" in err, err
    assert list(temp.iterdir()) == [], list(temp.iterdir())
    lines = [json.loads(line) for line in followed.read_text().splitlines()]
    iterations = [int.from_bytes(bytes.fromhex(f["memory"][0]["hex"]), "little") for f in lines if "frame" in f]
    assert len(iterations) > 20 and iterations == list(range(iterations[0], iterations[0] + len(iterations))), iterations[:5]
