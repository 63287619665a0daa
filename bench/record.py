#!/usr/bin/env python3
"""The flight recorder (--record) under load: T threads hitting a fast tracepoint that collects
`$regs` + 64 B, recorded into files on this machine's disk, against the same trace without the
recording and against LTTng-UST recording the same payload from the same program; one run,
side by side.

Usage: bench/record.py [--tpagent PATH] [--threads 1,2,4] [--gaps 0,2000] [--ms MS]
                       [--base-ms MS] [--repeat R] [--buffer-mib M] [--dir DIR] [--sink host]
       bench/record.py --soak SECONDS [--soak-threads 4] [--soak-gap NS] [--files N] ...

programs/ftrace_loop.c (see bench/ftrace.py) calls traced() in a loop, untraced then traced,
each call followed by a busy wait of GAP ns (--gaps: 0 is as fast as the threads can; a gap
throttles the rate so that a recording can keep up). Columns, for each thread count and gap:
- tpagent: the trace into a circular buffer, nothing recorded (bench/ftrace.py's "regs+mem").
- tpagent --record: the same, every frame into rotating files in --dir (files of 64 MiB,
  removed after each run): frames recorded a second and MB a second of traced loop, frames
  not recorded (tstatus's notes: not collected for want of room, lost, not written), and
  tpagent's CPU time and largest RSS (/usr/bin/time around it).
  With --sink host, the recording is streamed instead (--record-host) to `tpdump record` on
  this machine, which makes the files in --dir; MB/s are of the files the host made.
- LTTng-UST: ftrace_loop.c built with its LTTng tracepoint (18 longs + the 64 B, see
  programs/ftrace_loop_lttng.h), a session recording to --dir in discard mode with 8
  subbuffers of 4 MiB a CPU (a larger channel than LTTng's default, which lost events where
  this one does not), started and stopped around the traced loop (bench/lttng_anchor.py).
Cost per hit = traced loop time / calls - untraced loop time / calls (bench/ftrace.py), the
median of R runs. A cell that cannot run says why.

--soak SECONDS: one long recording instead (the flight recorder left running): T threads
(--soak-threads) hitting the tracepoint with --soak-gap ns between calls, files of 64 MiB,
the newest --files kept; then every kept file is read by tpdump, and the counts must add up:
frames recorded + frames counted as not recorded = hits, frames in the kept files = the sum
of their status lines' counts.
"""

import argparse
import json
import os
import re
import subprocess
import shutil
import socket
import statistics
import sys
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
import ftrace  # noqa: E402
import lttng_anchor  # noqa: E402

# What each hit collects. "longs": the LTTng event's payload, 18 longs (of the program's globals) and the
# 64 B of buf; "regs": gdb's `collect $regs` and buf, whose frame in a file holds the whole
# register block of the target description (2416 bytes with AVX-512).
PAYLOADS = {
    "longs": ftrace.Case("18 longs + 64 B", ["collect calls[0][0]@18, buf"]),
    "regs": ftrace.CASES["regs+mem"],
}
NOTES = re.compile(r"Trace notes: (.*)")
# tpagent's CPU time (clock ticks) and largest RSS, read by gdb after tstop.
USAGE_COMMAND = ("shell p=$(pgrep -n -x tpagent); "
                 "awk '{print \"tpagent_cpu_ticks=\" $14+$15}' /proc/$p/stat; "
                 "awk '/VmHWM/{print \"tpagent_rss_kib=\" $2}' /proc/$p/status")
TICKS = os.sysconf("SC_CLK_TCK")


def count(pattern: str, text: str) -> int:
    m = re.search(pattern, text)
    return int(m.group(1)) if m else 0


def receive_stream(port: int, record_dir: Path) -> subprocess.Popen:
    """tpdump record on this machine: the host end of --sink host."""
    tpdump = Path(__file__).resolve().parent.parent / "build" / "default" / "bin" / "tpdump"
    return subprocess.Popen([str(tpdump), "record", f"127.0.0.1:{port}", str(record_dir)],
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)


def until_stream_settles(record_dir: Path, limit_s: float = 60) -> None:
    """Until the host tool's state has not changed for 2 s: everything sent is kept."""
    state, last, since = record_dir / ".tpdump-record", None, time.monotonic()
    deadline = time.monotonic() + limit_s
    while time.monotonic() < deadline:
        now = state.read_text() if state.exists() else None
        if now != last:
            last, since = now, time.monotonic()
        elif time.monotonic() - since >= 2:
            return
        time.sleep(0.2)


def recorded_run(server: ftrace.Server, args, threads: int, workdir: Path, record_dir: Path,
                 stream_port: int | None = None) -> dict:
    """One tpagent run; with --record, its figures from tstatus's notes and /usr/bin/time. With
    STREAM_PORT (--record-host), tpdump record receives the stream into RECORD_DIR."""
    shutil.rmtree(record_dir, ignore_errors=True)
    record_dir.mkdir(parents=True)
    args.after_tstop = [USAGE_COMMAND]
    receiver = receive_stream(stream_port, record_dir) if stream_port else None
    try:
        r = ftrace.run(server, PAYLOADS[args.payload], threads, args, workdir)
        if receiver:
            until_stream_settles(record_dir)
    finally:
        if receiver:
            receiver.terminate()
            receiver.wait()
    notes = NOTES.findall(r["text"])
    note = notes[-1] if notes else ""  # after tstop: every frame taken
    r["recorded"] = count(r"recorded (\d+) frame", note)
    r["not_recorded"] = sum(count(p, note) for p in (r"(\d+) lost", r"(\d+) not collected", r"(\d+) not written"))
    r["bytes"] = sum(f.stat().st_size for f in record_dir.glob("trace-*.tf"))
    r["cpu_s"] = count(r"tpagent_cpu_ticks=(\d+)", r["text"]) / TICKS
    r["rss_kib"] = count(r"tpagent_rss_kib=(\d+)", r["text"])
    shutil.rmtree(record_dir, ignore_errors=True)
    return r


def lttng_run(exe: Path, args, threads: int, workdir: Path) -> dict:
    r = lttng_anchor.measure_lttng(exe, workdir, threads, args.ms, args.base_ms, args.hits, args.gap_ns,
                                   subbuf_size="4M", num_subbuf=8)
    r["frames"] = r["hits"]
    r["not_recorded"] = r["discarded"]
    return r


def cpu_per_hit_ns(r: dict) -> float:
    """What a hit costs the calling thread in CPU time (not the time the CPU went to others)."""
    return r["traced_cpu_ns"] / r["hits"] - r["base_cpu_ns"] / r["base_calls"]


def median(runs: list[dict], value) -> float | None:
    values = [value(r) for r in runs if r is not None]
    return statistics.median(values) if values else None


def per_s(r: dict, key: str) -> float:
    return r[key] / (r["traced_ns"] / 1e9)


def tpagent_server(tpagent: Path, tplib: Path, exe: Path, *record: str) -> ftrace.Server:
    """tpagent starting the program with the in-process agent; RECORD: its --record options."""
    wrapper = ["--wrapper", "env", f"LD_PRELOAD={tplib}", "--"]
    return ftrace.Server("tpagent --record" if record else "tpagent", [str(tpagent), *record, *wrapper], exe)


def soak(args, tpagent: Path, tplib: Path) -> int:
    ftrace.RUN_TIMEOUT = args.soak + 300
    args.ms, args.gap_ns, args.hits = args.soak * 1000, args.soak_gap, 0
    with tempfile.TemporaryDirectory(dir=args.dir) as tmp:
        workdir = Path(tmp)
        record_dir = workdir / "recording"
        exe = ftrace.build(workdir)["nopie"]
        server = tpagent_server(tpagent, tplib, exe, "--record", str(record_dir), "--record-size", "64M",
                                "--record-files", str(args.files))
        started = time.monotonic()
        record_dir.mkdir()
        args.after_tstop = [USAGE_COMMAND]
        r = ftrace.run(server, PAYLOADS[args.payload], args.soak_threads, args, workdir)
        elapsed = time.monotonic() - started
        note = NOTES.findall(r["text"])[-1]  # after tstop: every frame taken
        recorded, hits = count(r"recorded (\d+) frame", note), r["hits"]
        not_recorded = {what: count(rf"(\d+) {what}", note) for what in ("lost", "not collected", "not written")}
        files = sorted(record_dir.glob("trace-*.tf"))
        tool = tpagent.parent / "tpdump"
        in_files = in_statuses = 0
        for f in files:
            out = subprocess.run([str(tool), "--json", "--registers", "none", str(f)], capture_output=True, text=True,
                                 timeout=600)
            if out.returncode != 0:
                print(f"{f.name}: tpdump failed: {out.stderr.strip()}")
                return 1
            in_files += len(out.stdout.splitlines())
            head = subprocess.run([str(tool), "--frames", "0", "--registers", "none", str(f)], capture_output=True,
                                  text=True, timeout=600).stdout
            m = re.search(r"^status: [^\n]*?, (\d+) frames", head, re.M)
            in_statuses += int(m.group(1)) if m else 0
        print(json.dumps({"seconds": round(elapsed), "threads": args.soak_threads, "gap_ns": args.soak_gap,
                          "payload": PAYLOADS[args.payload].label, "hits": hits, "recorded": recorded,
                          "not_recorded": not_recorded, "files_kept": len(files),
                          "frames_in_kept_files": in_files, "frames_their_statuses_say": in_statuses,
                          "tpagent_cpu_s": count(r"tpagent_cpu_ticks=(\d+)", r["text"]) / TICKS,
                          "tpagent_max_rss_mib": round(count(r"tpagent_rss_kib=(\d+)", r["text"]) / 1024, 1)},
                         indent=1))
        print(f"tstatus notes: {note}")
        ok = recorded + sum(not_recorded.values()) == hits and len(files) == args.files and in_files == in_statuses
        print("counts add up, files rotated and kept" if ok else "COUNTS DO NOT ADD UP or files not kept as asked")
        return 0 if ok else 1


def measure_cell(columns: dict, args, threads: int) -> tuple[dict, dict]:
    """Every column's runs for one gap and thread count, interleaved: (runs, failures)."""
    cells = {key: [] for key in columns}
    failures = {}
    for i in range(args.repeat):
        for key, measure in columns.items():
            if key in failures:
                continue
            try:
                r = measure(threads)
            except (ftrace.RunFailed, RuntimeError) as e:
                failures[key] = f"failed: {e}"[:120]
                print(f"gap {args.gap_ns} ns, {threads} thread(s), {key}: {failures[key]}", flush=True)
                continue
            cells[key].append(r)
            print(f"gap {args.gap_ns} ns, {threads} thread(s), {key}, run {i + 1}: {r['hits']} hits, "
                  f"{ftrace.per_hit_ns(r):.1f} ns/hit wall, {cpu_per_hit_ns(r):.1f} CPU, "
                  f"{r.get('recorded', '-')} recorded, {r.get('not_recorded', '-')} not, "
                  f"{r.get('bytes', 0) / 1e6:.0f} MB", flush=True)
    return cells, failures


def table_row(gap: int, threads: int, cells: dict, failures: dict) -> str:
    def cost(key):
        wall, cpu = median(cells[key], ftrace.per_hit_ns), median(cells[key], cpu_per_hit_ns)
        text = f"{wall:.0f} / {cpu:.0f}" if wall is not None else failures.get(key, "n/a")
        return text, cpu
    plain_s, plain_cpu = cost("plain")
    rec_s, rec_cpu = cost("record")
    lt_s, lt_cpu = cost("lttng")
    rec, lt = cells["record"], cells["lttng"]
    offered = median(cells["plain"], lambda r: per_s(r, "hits"))
    cols = [f"{gap} ns", str(threads), f"{offered:,.0f}" if offered else "", plain_s, rec_s,
            f"{rec_cpu / plain_cpu:.2f}x" if rec_cpu and plain_cpu and plain_cpu > 0 else ""]
    if rec:
        cols += [f"{median(rec, lambda r: per_s(r, 'recorded')):,.0f}",
                 f"{median(rec, lambda r: per_s(r, 'bytes') / 1e6):,.0f}",
                 f"{median(rec, lambda r: r['not_recorded']):,.0f}",
                 f"{median(rec, lambda r: r['cpu_s'] / (r['traced_ns'] / 1e9)):.2f} s/s, "
                 f"{median(rec, lambda r: r['rss_kib'] / 1024):.0f} MiB"]
    else:
        cols += ["", "", "", ""]
    cols.append(lt_s)
    if lt:
        cols += [f"{median(lt, lambda r: per_s(r, 'recorded')):,.0f}", f"{median(lt, lambda r: r['discarded']):,.0f}"]
    else:
        cols += ["", ""]
    cols.append(f"{lt_cpu / rec_cpu:.1f}x" if lt_cpu and rec_cpu and rec_cpu > 0 else "")
    return "| " + " | ".join(cols) + " |"


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    default_tp = next((p for p in (ftrace.REPO / "build/release/bin/tpagent", ftrace.REPO / "build/default/bin/tpagent")
                       if p.exists()), ftrace.REPO / "build/default/bin/tpagent")
    parser.add_argument("--tpagent", type=Path, default=default_tp, help=f"tpagent binary (default {default_tp})")
    parser.add_argument("--threads", type=ftrace.thread_counts, default=[1, 2, 4])
    parser.add_argument("--gaps", default="0,20000", help="busy waits after each call, ns, comma-separated")
    parser.add_argument("--payload", choices=sorted(PAYLOADS), default="longs",
                        help="what a hit collects (default longs: the LTTng event's payload)")
    parser.add_argument("--ms", type=int, default=1000,
                        help="traced loop length (default 1000 ms), with --hits the longest it may take")
    parser.add_argument("--hits", type=int, default=0,
                        help="calls of the traced loop, all threads together (default 0: --ms long)")
    parser.add_argument("--base-ms", type=int, default=300, help="untraced loop length (default 300 ms)")
    parser.add_argument("--repeat", type=int, default=3, help="runs per figure, median taken (default 3)")
    parser.add_argument("--buffer-mib", type=int, default=16, help="trace buffer size (default 16 MiB)")
    parser.add_argument("--dir", type=Path, default=Path("/var/tmp"), help="where recordings go (default /var/tmp)")
    parser.add_argument("--sink", choices=["folder", "host"], default="folder",
                        help="where the --record column records: files in --dir (default), or "
                             "--record-host to tpdump record on this machine, into --dir")
    parser.add_argument("--soak", type=int, help="one recording of SECONDS instead of the table")
    parser.add_argument("--soak-threads", type=int, default=4)
    parser.add_argument("--soak-gap", type=int, default=400000, help="ns between calls in --soak (default 400000)")
    parser.add_argument("--files", type=int, default=16, help="files kept in --soak (default 16)")
    args = parser.parse_args()

    tpagent = args.tpagent.resolve()
    tplib = tpagent.parent / "libtpagent-inproc.so"
    if not tpagent.exists() or not tplib.exists():
        print(f"no tpagent or libtpagent-inproc.so at {tpagent.parent}")
        return 1
    if args.soak:
        return soak(args, tpagent, tplib)
    started = time.monotonic()
    rows = []
    with tempfile.TemporaryDirectory(dir=args.dir) as tmp:
        workdir = Path(tmp)
        record_dir = workdir / "recording"
        exe = ftrace.build(workdir)["nopie"]
        why_no_lttng = lttng_anchor.lttng_available()
        lttng_exe = None
        if not why_no_lttng:
            try:
                lttng_exe = lttng_anchor.build_lttng(workdir)
            except RuntimeError as e:
                why_no_lttng = str(e)
        plain = tpagent_server(tpagent, tplib, exe)
        stream_port = None
        if args.sink == "host":
            with socket.socket() as probe:  # a free port for the stream
                probe.bind(("127.0.0.1", 0))
                stream_port = probe.getsockname()[1]
            recording = tpagent_server(tpagent, tplib, exe, "--record-host", f":{stream_port}", "--record-size", "64M")
        else:
            recording = tpagent_server(tpagent, tplib, exe, "--record", str(record_dir), "--record-size", "64M")

        def no_lttng(threads):
            raise RuntimeError(why_no_lttng)
        columns = {
            "plain": lambda threads: recorded_run(plain, args, threads, workdir, record_dir),
            "record": lambda threads: recorded_run(recording, args, threads, workdir, record_dir, stream_port),
            "lttng": (lambda threads: lttng_run(lttng_exe, args, threads, workdir)) if lttng_exe else no_lttng,
        }
        for gap in [int(g) for g in args.gaps.split(",")]:
            args.gap_ns = gap
            for threads in args.threads:
                rows.append(table_row(gap, threads, *measure_cell(columns, args, threads)))
    print(f"\n(measured in {time.monotonic() - started:.0f} s; payload {PAYLOADS[args.payload].label}; "
          f"medians of {args.repeat} runs of {args.ms} ms; costs per hit in ns, wall / CPU of the calling thread)\n")
    print("| gap | threads | hits/s offered | tpagent | --record | CPU on/off | recorded frames/s | MB/s "
          "| not recorded | tpagent CPU, RSS | LTTng-UST | events/s recorded | discarded | LTTng/--record (CPU) |")
    print("|---|---|---|---|---|---|---|---|---|---|---|---|---|---|")
    for row in rows:
        print(row)
    return 0


if __name__ == "__main__":
    sys.exit(main())
