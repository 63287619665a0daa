"""tpdump on the trace files gdb and tpagent wrote (tests/data/tracefiles): text, --json,
--perfetto, filters, damaged files and exit codes. Run by ctest as `tools.tpdump`; TPDUMP and
TRACEFILES come from the environment."""
import json
import os
import re
import shutil
import subprocess
from decimal import Decimal
from pathlib import Path

import pytest

TPDUMP = os.environ.get("TPDUMP", "tpdump")
DATA = Path(os.environ.get("TRACEFILES", Path(__file__).parents[2] / "tests/data/tracefiles"))
WORK = 0x555555555144
COUNTERS = 0x555555558060
THREAD = "thread @0x7ffff7dd0740"  # the TLS base of the one thread of basic.tf and stepping.tf


def run(*args, check=True):
    proc = subprocess.run([TPDUMP, *map(str, args)], capture_output=True, text=True, timeout=60)
    if check:
        assert proc.returncode == 0, proc.stderr
    return proc


def test_text_summary_tracepoints_and_frames():
    out = run(DATA / "basic.tf").stdout
    assert "5 frames" in out
    assert "status: stopped (tstop), 5 frames (5 created)" in out
    assert "register block: 2500 bytes, 155 registers (i386:x86-64)" in out
    assert "$calls" in out and "$trace_timestamp" in out
    assert f"tracepoint 3 at {WORK:#x}, enabled, 5 hits" in out
    assert "location: work" in out
    assert "collect $regs, step, *slot, glob, counters[1]@3, $trace_timestamp" in out
    assert "teval $calls = $calls + 1" in out
    assert "M-1,555555558040,4" in out
    for n in range(5):
        assert f"frame {n}: tracepoint 3 (work), pc {WORK:#x}" in out
        assert f"variable $calls = {n + 1}" in out
    assert "rip 0x0000555555555144" in out
    # glob = 100 in frame 0, as a hexdump line
    assert "0000555555558040  64 00 00 00" in out


def test_text_stepping_file():
    out = run(DATA / "stepping.tf").stdout
    assert "status: stopped (tpasscount, tracepoint 5), 14 frames" in out
    assert "tracepoint 4 at 0x555555555197, disabled" in out
    assert "condition: step % 2 == 0" in out
    assert "while-stepping actions:" in out
    assert "pass count 4" in out


def test_disassemble_shows_bytecode():
    out = run("--disassemble", "--frames", "0", DATA / "basic.tf").stdout
    assert "reg 6" in out and "trace" in out


def test_tracepoint_and_frame_filters():
    out = run("--tracepoint", 5, DATA / "stepping.tf").stdout
    frames = [l for l in out.splitlines() if l.startswith("frame ")]
    assert len(frames) == 4
    assert all(": tracepoint 5 " in l for l in frames)
    assert "tracepoint 3 at" not in out

    out = run("--frames", "2-3", DATA / "basic.tf").stdout
    frames = [l.split(":")[0] for l in out.splitlines() if l.startswith("frame ")]
    assert frames == ["frame 2", "frame 3"]

    out = run("--frames=3-", "--tracepoint=3", DATA / "basic.tf").stdout
    assert [l.split(":")[0] for l in out.splitlines() if l.startswith("frame ")] == [
        "frame 3", "frame 4"]


def test_json_lines():
    lines = run("--json", DATA / "basic.tf").stdout.splitlines()
    assert len(lines) == 5
    for n, line in enumerate(lines):
        frame = json.loads(line)
        assert frame["frame"] == n
        assert frame["tracepoint"] == 3
        assert int(frame["pc"], 16) == WORK
        assert int(frame["registers"]["rip"], 16) == WORK
        assert int(frame["registers"]["rdi"], 16) == n  # step
        assert len(frame["registers"]) == 155
        variables = {v["name"]: v["value"] for v in frame["variables"]}
        assert variables["$calls"] == n + 1  # named as gdb spells them
        assert variables["$trace_timestamp"] > 0
        slot = [m for m in frame["memory"] if int(m["address"], 16) == COUNTERS + 8 * n]
        assert slot, frame["memory"]
        assert slot[0]["length"] == 8
        assert int.from_bytes(bytes.fromhex(slot[0]["hex"]), "little") == 10 + n


def test_json_register_selection():
    frame = json.loads(run("--json", "--registers", "rip,rsp", "--frames", "0",
                           DATA / "basic.tf").stdout)
    assert sorted(frame["registers"]) == ["rip", "rsp"]
    frame = json.loads(run("--json", "--registers", "none", "--frames", "0",
                           DATA / "basic.tf").stdout)
    assert frame["registers"] == {}


def perfetto(path):
    """The document, track names by tid, and the instant events of tracepoint tracks (pid 1)
    and of thread tracks (pid 2)."""
    doc = json.loads(run("--perfetto", path).stdout)
    assert isinstance(doc["traceEvents"], list)
    names = {e["tid"]: e["args"]["name"] for e in doc["traceEvents"]
             if e["ph"] == "M" and e["name"] == "thread_name"}
    instants = [e for e in doc["traceEvents"] if e["ph"] == "i"]
    for e in instants:
        assert {"name", "ts", "pid", "tid", "args"} <= e.keys()
        assert e["tid"] in names
    by_tracepoint = [e for e in instants if e["pid"] == 1]
    by_thread = [e for e in instants if e["pid"] == 2]
    assert len(by_tracepoint) + len(by_thread) == len(instants)
    return doc, names, by_tracepoint, by_thread


def test_perfetto_with_timestamps():
    doc, names, instants, threads = perfetto(DATA / "basic.tf")
    assert names == {3: "tracepoint 3: work", 0x10000: THREAD}
    assert len(instants) == 5
    assert doc["otherData"]["clock"] == "$trace_timestamp (microseconds)"
    times = [e["ts"] for e in instants]
    assert times == sorted(times) and len(set(times)) == 5
    # gdbserver's $trace_timestamp is in microseconds: ts is its value.
    assert [e["ts"] for e in instants] == [e["args"]["$trace_timestamp"] for e in instants]
    assert instants[0]["ts"] == 3446107777
    assert instants[0]["args"]["$calls"] == 1
    assert instants[0]["args"]["thread"] == THREAD
    # The one thread's track has the same events.
    assert [(e["ts"], e["args"]) for e in threads] == [(e["ts"], e["args"]) for e in instants]
    assert {e["tid"] for e in threads} == {0x10000}


def test_perfetto_in_frame_order():
    doc, names, instants, threads = perfetto(DATA / "stepping.tf")
    assert set(names) == {3, 4, 5, 0x10000}
    assert len(instants) == 14
    assert doc["otherData"]["clock"] == "frame order"
    assert [e["ts"] for e in instants] == list(range(14))
    # The while-stepping steps' register blocks have no fs_base: no thread track for them.
    assert len(threads) == sum("thread" in e["args"] for e in instants) == 10


def test_perfetto_tpagent_nanosecond_clock_and_threads():
    """threads.tf (tpagent, tsave -r): two threads, $trace_timestamp (epoch microseconds)
    and $trace_timestamp_ns (monotonic nanoseconds) in every frame."""
    path = DATA / "threads.tf"
    doc, names, instants, threads = perfetto(path)
    assert doc["otherData"]["clock"] == "$trace_timestamp_ns (nanoseconds)"
    assert len(instants) == 6
    # ts is exactly the nanosecond clock in microseconds (read without float rounding).
    exact = json.loads(run("--perfetto", path).stdout, parse_float=Decimal)
    for e in (e for e in exact["traceEvents"] if e["ph"] == "i"):
        assert e["ts"] == Decimal(e["args"]["$trace_timestamp_ns"]) / 1000
    # The same span as the microsecond clock read with it: not 1000 times longer.
    span = instants[-1]["ts"] - instants[0]["ts"]
    span_us = instants[-1]["args"]["$trace_timestamp"] - instants[0]["args"]["$trace_timestamp"]
    assert span > 0 and 0.5 < span / span_us < 2
    # One track per thread, three frames each, every frame on its thread's track too.
    thread_names = {tid: name for tid, name in names.items() if tid >= 0x10000}
    assert len(thread_names) == 2
    assert all(name.startswith("thread @0x") for name in thread_names.values())
    for tid, name in thread_names.items():
        mine = [e for e in threads if e["tid"] == tid]
        assert len(mine) == 3
        assert all(e["args"]["thread"] == name for e in mine)
    assert sorted((e["ts"], e["args"]["frame"]) for e in threads) == \
        sorted((e["ts"], e["args"]["frame"]) for e in instants)


def test_perfetto_frames_without_a_thread_stay_on_their_tracepoint_track(tmp_path):
    # basic.tf's thread is known from fs_base only: without its registers it is not.
    cut = tmp_path / "no-regs.tf"
    cut.write_bytes(drop_register_blocks((DATA / "basic.tf").read_bytes()))
    _, names, instants, threads = perfetto(cut)
    assert set(names) == {3}
    assert len(instants) == 5 and threads == []
    assert all("thread" not in e["args"] for e in instants)


def drop_register_blocks(data):
    """basic.tf with its R blocks (0x9c4 bytes each, first in every frame) removed."""
    size = 0x9c4
    out = bytearray()
    text_end = data.index(b"\n\n") + 2  # the empty line that ends the text section
    out += data[:text_end]
    pos = text_end
    while int.from_bytes(data[pos:pos + 2], "little") != 0:
        length = int.from_bytes(data[pos + 2:pos + 6], "little")
        body = data[pos + 6:pos + 6 + length]
        assert body[0:1] == b"R"
        body = body[1 + size:]
        out += data[pos:pos + 2] + len(body).to_bytes(4, "little") + body
        pos += 6 + length
    out += data[pos:]
    return bytes(out)


def test_empty_file():
    out = run(DATA / "empty.tf").stdout
    assert "0 frames" in out
    assert run("--json", DATA / "empty.tf").stdout == ""
    _, _, instants, threads = perfetto(DATA / "empty.tf")
    assert instants == [] and threads == []


def test_bad_file_exit_1_with_offset(tmp_path):
    whole = (DATA / "basic.tf").read_bytes()
    cut = tmp_path / "cut.tf"
    cut.write_bytes(whole[:20000])
    proc = run(cut, check=False)
    assert proc.returncode == 1
    assert "offset 17653: frame 0 (tracepoint 3): data length" in proc.stderr
    other = tmp_path / "other.tf"
    other.write_bytes(b"hello world\n")
    proc = run(other, check=False)
    assert proc.returncode == 1 and "offset 0: not a trace file" in proc.stderr
    proc = run(tmp_path / "missing.tf", check=False)
    assert proc.returncode == 1


@pytest.mark.parametrize("args", [[], ["--frames", "x"], ["--tracepoint", "0", "f"],
                                  ["--json", "--perfetto", "f"], ["--nope", "f"], ["a", "b"],
                                  ["--frames", "", "f"], ["--registers", ",", "f"],
                                  ["--tracepoint"]])
def test_usage_errors_exit_2(args):
    proc = run(*args, check=False)
    assert proc.returncode == 2
    assert "tpdump --help" in proc.stderr


def test_fast_tracepoint_written_by_gdb():
    """fast.tf: gdb's tsave writes the fast tracepoint's `tp T` line with `F0`."""
    assert b"tp T3:401135:E:0:0:F0\n" in (DATA / "fast.tf").read_bytes()
    out = run(DATA / "fast.tf").stdout
    assert "fast tracepoint 3 at 0x401135, enabled" in out
    assert "location: traced.c:16" in out
    frames = [l for l in out.splitlines() if l.startswith("frame ")]
    assert len(frames) == 5
    assert all("tracepoint 3 (traced.c:16), pc 0x401135" in l for l in frames)
    lines = run("--json", DATA / "fast.tf").stdout.splitlines()
    assert [json.loads(l)["frame"] for l in lines] == list(range(5))


def with_variable_name(tmp_path, name_bytes):
    """A copy of basic.tf whose variable 2 ($calls) is named `name_bytes`."""
    data = (DATA / "basic.tf").read_bytes()
    old = b"tsv 2:0:0:" + b"calls".hex().encode() + b"\n"
    assert data.count(old) == 1
    path = tmp_path / "renamed.tf"
    path.write_bytes(data.replace(old, b"tsv 2:0:0:" + name_bytes.hex().encode() + b"\n"))
    return path


def test_utf8_names_come_out_intact(tmp_path):
    path = with_variable_name(tmp_path, "café".encode())
    raw = subprocess.run([TPDUMP, "--json", "--frames", "0", path], capture_output=True,
                         timeout=60, check=True).stdout
    assert "\"$café\"".encode() in raw  # UTF-8 as it is, not \u escapes of its bytes
    frame = json.loads(raw)
    assert {v["name"] for v in frame["variables"]} == {"$trace_timestamp", "$café"}
    doc = json.loads(run("--perfetto", path).stdout)
    event = next(e for e in doc["traceEvents"] if e["ph"] == "i")
    assert event["args"]["$café"] == 1
    assert "$café = 1" in run("--frames", "0", path).stdout


def test_invalid_utf8_still_gives_json_and_html(tmp_path):
    path = with_variable_name(tmp_path, b"bad\xff")
    frame = json.loads(run("--json", "--frames", "0", path).stdout)
    assert "$bad\ufffd" in {v["name"] for v in frame["variables"]}
    json.loads(run("--perfetto", path).stdout)
    assert "<html" in run("--html", path).stdout  # the page's frame details too (found by fuzz_tpdump)


def cut_in_frame_3(tmp_path):
    """basic.tf cut in the middle of frame 3; the offset its error names (the length field)."""
    whole = (DATA / "basic.tf").read_bytes()
    offsets = [json.loads(l)["offset"] for l in run("--json", DATA / "basic.tf").stdout.splitlines()]
    frame_3 = offsets[3]
    path = tmp_path / "cut.tf"
    path.write_bytes(whole[:(frame_3 + offsets[4]) // 2])
    return path, frame_3 + 2


@pytest.mark.parametrize("fmt", ["text", "json", "perfetto"])
def test_damaged_file_prints_the_frames_before_the_damage(tmp_path, fmt):
    path, offset = cut_in_frame_3(tmp_path)
    proc = run(*([] if fmt == "text" else [f"--{fmt}"]), path, check=False)
    assert proc.returncode == 1
    assert f"offset {offset}: frame 3 (tracepoint 3): data length" in proc.stderr
    if fmt == "text":
        assert "3 frames before the damage" in proc.stdout
        frames = [l.split(":")[0] for l in proc.stdout.splitlines() if l.startswith("frame ")]
        assert frames == ["frame 0", "frame 1", "frame 2"]
    elif fmt == "json":
        assert [json.loads(l)["frame"] for l in proc.stdout.splitlines()] == [0, 1, 2]
    else:
        doc = json.loads(proc.stdout)
        frames = [e["args"]["frame"] for e in doc["traceEvents"] if e["ph"] == "i" and e["pid"] == 1]
        assert frames == [0, 1, 2]
        assert doc["otherData"]["damage"].startswith(f"offset {offset}:")


def test_unknown_register_or_tracepoint_is_a_usage_error():
    proc = run("--registers", "rip,nosuch", DATA / "basic.tf", check=False)
    assert proc.returncode == 2
    assert "no register 'nosuch'" in proc.stderr and "tpdump --help" in proc.stderr
    proc = run("--json", "--registers", "rip", DATA / "stepping.tf", check=False)
    assert proc.returncode == 0  # stepping.tf has a target description too
    proc = run("--tracepoint", 9, DATA / "basic.tf", check=False)
    assert proc.returncode == 2
    assert "--tracepoint 9: no such tracepoint in the file (it has 3)" in proc.stderr
    proc = run("--tracepoint", 3, "--tracepoint", 7, DATA / "stepping.tf", check=False)
    assert proc.returncode == 2 and "--tracepoint 7:" in proc.stderr
    assert run("--registers", "none", "--tracepoint", 5, DATA / "stepping.tf").returncode == 0


def project_version():
    cmake = (Path(__file__).parents[2] / "CMakeLists.txt").read_text()
    return re.search(r"project\(tpagent VERSION (\S+)", cmake).group(1)


def test_version():
    assert run("--version").stdout == f"tpdump {project_version()}\n"


def test_help():
    out = run("--help").stdout
    lines = out.splitlines()
    assert lines[0] == "Usage: tpdump [OPTIONS] FILE"
    assert "Examples:" in lines and "Exit status:" in lines
    for option in ["-h, --help", "--version", "--tracepoint N", "--frames A-B",
                   "--registers LIST", "--all-registers", "--disassemble", "--json",
                   "--perfetto"]:
        assert any(l.startswith(f"  {option}  ") for l in lines), option


@pytest.mark.skipif(not shutil.which("help2man"), reason="help2man is not installed")
def test_help2man_reads_help_and_version():
    page = subprocess.run(["help2man", "--no-info", "--no-discard-stderr", TPDUMP],
                          capture_output=True, text=True, timeout=60, check=True).stdout
    assert '.TH TPDUMP "1"' in page and f"tpdump {project_version()}" in page
    assert ".SH SYNOPSIS" in page and ".SH OPTIONS" in page and ".SH EXAMPLES" in page
    assert "\\fB\\-\\-perfetto\\fR" in page
