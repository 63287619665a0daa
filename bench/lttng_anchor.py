#!/usr/bin/env python3
"""LTTng-UST anchor for bench/ftrace.py: the cost of recording the same payload (18 longs, a
register dump's worth, + the 64 bytes of `buf`) with an LTTng-UST tracepoint compiled into
traced(), in the same program (programs/ftrace_loop.c built with -DFTRACE_LOOP_LTTNG, see
programs/ftrace_loop_lttng.h).

measure_lttng() runs the program with FTRACE_LOOP_HANDSHAKE=1: it starts the recording session
when the program says "ready" (untraced loop done) and stops it when it says "traced" (traced
loop done), so the session records exactly the traced loop. Cost per event = traced_ns / hits -
base_ns / base_calls, as in bench/ftrace.py. The UST channel is in discard mode (LTTng's
default): when the consumer daemon cannot keep up, the tracer drops events and counts them;
GAP_NS (the program's 5th argument) throttles the hit rate so that it can keep up.

Usage (a quick check): bench/lttng_anchor.py [--threads 1,2] [--ms MS] [--base-ms MS]
                       [--hits N] [--gap-ns 0,2000] [--subbuf-size 1M] [--num-subbuf 8] [--keep]

A session daemon is started (`lttng-sessiond --daemonize`) when none answers, and left running.
"""

import argparse
import os
import queue
import re
import shutil
import struct
import subprocess
import tempfile
import threading
import time
import uuid
from pathlib import Path

HERE = Path(__file__).resolve().parent
PROGRAMS = HERE / "programs"
EVENT = "tpagent_bench:hit"
CHANNEL = "anchor"
LTTNG_TIMEOUT = 60  # one lttng command
STOP_TIMEOUT = 300  # `lttng stop` waits until the consumer has written all the data out
START_TIMEOUT = 60  # program start to "ready", on top of the untraced loop
END_TIMEOUT = 60  # "traced" / the result line, on top of the traced loop
RESULT = re.compile(r"base_calls=(\d+) base_ns=(\d+) traced_calls=(\d+) traced_ns=(\d+)"
                    r"(?: base_cpu_ns=(\d+) traced_cpu_ns=(\d+))?")


def _run(cmd: list[str], timeout: float, **kw) -> subprocess.CompletedProcess:
    """cmd with its output captured; RuntimeError if it cannot start or takes too long."""
    try:
        return subprocess.run(cmd, stdin=subprocess.DEVNULL, capture_output=True, text=True,
                              timeout=timeout, **kw)
    except FileNotFoundError as e:
        raise RuntimeError(f"{cmd[0]}: not found") from e
    except subprocess.TimeoutExpired as e:
        raise RuntimeError(f"`{' '.join(cmd)}` took more than {timeout} s") from e


def _tail(text: str, lines: int = 4) -> str:
    return " | ".join(ln.strip() for ln in text.strip().splitlines()[-lines:] if ln.strip())


def _lttng(*args: str, timeout: float = LTTNG_TIMEOUT) -> str:
    """Runs `lttng ARGS`; its stdout + stderr, RuntimeError if it fails."""
    r = _run(["lttng", *args], timeout)
    out = r.stdout + r.stderr
    if r.returncode != 0:
        raise RuntimeError(f"`lttng {' '.join(args)}` failed ({r.returncode}): {_tail(out) or 'no output'}")
    return out


def _headers_missing() -> str | None:
    """Why <lttng/tracepoint.h> cannot be compiled, or None."""
    try:
        r = subprocess.run(["cc", "-E", "-x", "c", "-o", os.devnull, "-"], input="#include <lttng/tracepoint.h>\n",
                           capture_output=True, text=True, timeout=60)
    except FileNotFoundError:
        return "no C compiler (cc)"
    except subprocess.TimeoutExpired:
        return "cc -E took more than 60 s"
    if r.returncode != 0:
        return "LTTng-UST headers missing (<lttng/tracepoint.h>: install liblttng-ust-dev)"
    return None


def build_lttng(workdir: Path) -> Path:
    """ftrace_loop.c with its LTTng-UST tracepoint (-DFTRACE_LOOP_LTTNG), non-PIE, with the flags
    of bench/ftrace.py's build(); the executable."""
    missing = _headers_missing()
    if missing:
        raise RuntimeError(f"cannot build the LTTng variant of ftrace_loop.c: {missing}")
    exe = Path(workdir) / "ftrace_loop_lttng"
    # -I: lttng/tracepoint-event.h includes TRACEPOINT_INCLUDE ("./ftrace_loop_lttng.h") from there.
    cmd = ["cc", "-g", "-O1", "-fcf-protection=none", "-pthread", "-fno-pie", "-no-pie", "-DFTRACE_LOOP_LTTNG",
           "-I", str(PROGRAMS), "-o", str(exe), str(PROGRAMS / "ftrace_loop.c"), "-llttng-ust", "-ldl"]
    r = _run(cmd, 300)
    if r.returncode != 0:
        raise RuntimeError(f"cannot build the LTTng variant of ftrace_loop.c: {_tail(r.stderr, 6)}")
    return exe


def ensure_sessiond() -> None:
    """Makes sure a session daemon answers `lttng list`, starting one if needed (as root, the
    root session daemon); RuntimeError if none can be had."""
    if _run(["lttng", "list"], LTTNG_TIMEOUT).returncode == 0:
        return
    r = _run(["lttng-sessiond", "--daemonize"], LTTNG_TIMEOUT)
    if r.returncode != 0:
        raise RuntimeError(f"no session daemon, and `lttng-sessiond --daemonize` failed ({r.returncode}): "
                           f"{_tail(r.stdout + r.stderr) or 'no output'}")
    deadline = time.monotonic() + 20
    while True:
        r = _run(["lttng", "list"], LTTNG_TIMEOUT)
        if r.returncode == 0:
            return
        if time.monotonic() > deadline:
            raise RuntimeError(f"started lttng-sessiond, but `lttng list` still fails: {_tail(r.stdout + r.stderr)}")
        time.sleep(0.2)


def lttng_available() -> str | None:
    """None if LTTng-UST can be measured here, else why not."""
    for tool in ("lttng", "lttng-sessiond", "babeltrace2"):
        if not shutil.which(tool):
            return f"no {tool} binary"
    missing = _headers_missing()
    if missing:
        return missing
    try:
        ensure_sessiond()
    except RuntimeError as e:
        return str(e)
    return None


class _Program:
    """The benchmark program, its stdout read line by line (with timeouts) by a thread."""

    def __init__(self, cmd: list[str], env: dict[str, str]):
        self.cmd = cmd
        try:
            self.proc = subprocess.Popen(cmd, env=env, stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                         stderr=subprocess.PIPE, text=True, start_new_session=True)
        except OSError as e:
            raise RuntimeError(f"cannot run {cmd[0]}: {e}") from e
        self.lines: queue.Queue = queue.Queue()
        self.seen: list[str] = []
        self.err: list[str] = []
        threading.Thread(target=self._pump, args=(self.proc.stdout, self.lines.put), daemon=True).start()
        threading.Thread(target=self._pump, args=(self.proc.stderr, lambda ln: ln is None or self.err.append(ln)),
                         daemon=True).start()

    @staticmethod
    def _pump(stream, put):
        for line in stream:
            put(line.rstrip("\n"))
        put(None)

    def _why(self) -> str:
        rc = self.proc.poll()
        status = "still running" if rc is None else f"exit status {rc}"
        return f"{status}; stdout: {' | '.join(self.seen[-3:]) or '-'}; stderr: {' | '.join(self.err[-3:]) or '-'}"

    def expect(self, pattern: str, timeout: float, what: str) -> re.Match:
        """The next stdout line that matches pattern (a regex, whole line)."""
        deadline = time.monotonic() + timeout
        while True:
            left = deadline - time.monotonic()
            try:
                line = self.lines.get(timeout=max(left, 0.001))
            except queue.Empty:
                raise RuntimeError(f"the program did not print {what} within {timeout:.0f} s ({self._why()})")
            if line is None:
                self.proc.wait(timeout=10)
                raise RuntimeError(f"the program ended before it printed {what} ({self._why()})")
            self.seen.append(line)
            m = re.fullmatch(pattern, line.strip())
            if m:
                return m

    def go_on(self) -> None:
        try:
            self.proc.stdin.write("\n")
            self.proc.stdin.flush()
        except (BrokenPipeError, OSError) as e:
            raise RuntimeError(f"cannot write to the program ({self._why()})") from e

    def finish(self, timeout: float) -> int:
        try:
            return self.proc.wait(timeout=timeout)
        except subprocess.TimeoutExpired:
            raise RuntimeError(f"the program did not exit within {timeout:.0f} s ({self._why()})")

    def kill(self) -> None:
        if self.proc.poll() is None:
            try:
                os.killpg(self.proc.pid, 9)
            except ProcessLookupError:
                pass
            self.proc.wait(timeout=30)
        for f in (self.proc.stdin, self.proc.stdout, self.proc.stderr):
            try:
                f.close()
            except OSError:
                pass


def _count_events(trace: Path, timeout: float) -> int:
    """Events in the trace: babeltrace2's utils.counter sink (C, ~1 s for 400 000 events), else
    the lines of its default text output (one per event; about 10 times slower)."""
    r = _run(["babeltrace2", str(trace), "--component=count:sink.utils.counter", "--params=step=+0"], timeout)
    m = re.search(r"^\s*(\d+) Event messages?$", r.stdout, re.M)
    if r.returncode == 0 and m:
        return int(m.group(1))
    try:
        proc = subprocess.Popen(["babeltrace2", str(trace)], stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                                stderr=subprocess.DEVNULL)
    except FileNotFoundError as e:
        raise RuntimeError("babeltrace2: not found") from e
    timer = threading.Timer(timeout, proc.kill)
    timer.start()
    try:
        n = sum(chunk.count(b"\n") for chunk in iter(lambda: proc.stdout.read(1 << 20), b""))
        rc = proc.wait()
    finally:
        timer.cancel()
    if rc != 0:
        raise RuntimeError(f"babeltrace2 cannot read the trace {trace} (exit status {rc}); "
                           f"utils.counter said: {_tail(r.stdout + r.stderr) or 'nothing'}")
    return n


def _trace_discarded(trace: Path) -> int | None:
    """Events the tracer discarded, from the trace: the packet index files the consumer daemon
    writes next to the streams (index/CHANNEL_CPU.idx, the CTF index of lttng-tools' ctf-index.h:
    big-endian header magic, major, minor, entry size; per packet offset, packet_size,
    content_size, timestamp_begin, timestamp_end, events_discarded, ...). events_discarded copies
    the packet context's field, the stream's running count of discarded events when the packet
    was closed: the stream's total is its largest value. None if the trace has no index."""
    total, found = 0, False
    for idx in trace.rglob("index/*.idx"):
        data = idx.read_bytes()
        if len(data) < 16:
            continue
        magic, _major, _minor, size = struct.unpack_from(">IIII", data)
        if magic != 0xC1F1DCC1 or size < 48:
            raise RuntimeError(f"{idx}: not a CTF packet index (magic {magic:#x}, entry size {size})")
        found = True
        total += max((struct.unpack_from(">Q", data, at + 40)[0] for at in range(16, len(data) - size + 1, size)),
                     default=0)
    return total if found else None


def _folder_bytes(path: Path) -> int:
    return sum(os.path.getsize(os.path.join(d, f)) for d, _, files in os.walk(path) for f in files)


def measure_lttng(exe: Path, workdir: Path, threads: int, ms: int, base_ms: int, hits: int, gap_ns: int,
                  subbuf_size: str = "default", num_subbuf: int | None = None, keep_trace: bool = False) -> dict:
    """One run of exe (build_lttng()'s) recorded by a fresh LTTng session, started and stopped
    right around the traced loop. Returns base_calls, base_ns, hits (the traced loop's calls),
    traced_ns (the program's own figures), recorded (events in the trace), discarded (events the
    tracer dropped, from the trace's packet index), discarded_lttng (the same as lttng stop/list
    report it, None if they do not), accounted (recorded + discarded == hits), bytes (size of the
    trace folder), cost_ns (traced_ns / hits - base_ns / base_calls), trace_dir (None unless
    keep_trace; else the trace is deleted once counted)."""
    ensure_sessiond()
    name = f"tpagent-anchor-{os.getpid()}-{uuid.uuid4().hex[:8]}"
    trace = Path(workdir).resolve() / f"lttng-{name}"
    program = [str(exe), str(ms), str(threads), str(base_ms), str(hits), str(gap_ns)]
    env = {**os.environ, "FTRACE_LOOP_HANDSHAKE": "1"}
    # The tracer's constructor waits this long for the session daemon to register the program
    # (default 3 s): registered late, it would miss the start of the traced loop.
    env.setdefault("LTTNG_UST_REGISTER_TIMEOUT", "30000")
    created = False
    prog = None
    try:
        _lttng("create", name, "--output", str(trace))
        created = True
        channel = ["enable-channel", "--userspace", "--session", name, "--discard"]
        if subbuf_size not in (None, "", "default"):
            channel += ["--subbuf-size", str(subbuf_size)]
        if num_subbuf is not None:
            channel += ["--num-subbuf", str(num_subbuf)]
        _lttng(*channel, CHANNEL)
        # Enabled before the program starts: until `lttng start` the tracepoint stays off in the
        # program (its untraced loop measured 2.3 ns a call with this session as with none).
        _lttng("enable-event", "--userspace", "--session", name, "--channel", CHANNEL, EVENT)

        prog = _Program(program, env)
        prog.expect("ready", START_TIMEOUT + base_ms / 1000, '"ready"')
        _lttng("start", name)
        prog.go_on()
        prog.expect("traced", END_TIMEOUT + ms / 1000, '"traced"')
        stop_output = _lttng("stop", name, timeout=STOP_TIMEOUT)
        prog.go_on()
        m = prog.expect(RESULT.pattern, END_TIMEOUT, "its result line")
        rc = prog.finish(END_TIMEOUT)
        if rc != 0:
            raise RuntimeError(f"the program failed with exit status {rc}: {' | '.join(prog.err[-3:])}")
        base_calls, base_ns, traced_calls, traced_ns = map(int, m.groups()[:4])
        base_cpu, traced_cpu = m.group(5), m.group(6)  # the threads' CPU time, when the program says

        # Discarded events. lttng reports them twice: `lttng stop` warns "Warning: N events were
        # discarded, ..." (nothing when N is 0) and `lttng list SESSION` shows the channel's
        # "Discarded events: N"; both are the consumer daemon's sum of the increments of each
        # stream's count between packets. babeltrace2's text output warns "Tracer discarded N
        # events between ..." per increment. All three go wrong when a packet's count goes
        # backwards, which happens with several threads on one per-CPU buffer (seen here: 0
        # in one packet between two of 6310): the consumer takes it for a wrap-around and adds
        # 2^63, babeltrace2 prints 2^64 - 6310. The figure used is the trace's own, each stream's
        # largest count (_trace_discarded); lttng's is returned as discarded_lttng.
        listing = _lttng("list", name)
        counts = re.findall(r"Discarded events:\s*(\d+)", listing)
        warned = re.search(r"(\d+) events? (?:were|was) discarded", stop_output)
        discarded_lttng = sum(map(int, counts)) if counts else int(warned.group(1)) if warned else None
        _lttng("destroy", name)
        created = False

        size = _folder_bytes(trace) if trace.exists() else 0
        recorded = _count_events(trace, 120 + size / 5e6) if size else 0
        discarded = _trace_discarded(trace) if size else 0
        if discarded is None:  # no index files (not seen): lttng's count
            discarded = discarded_lttng
        if discarded is None:
            raise RuntimeError(f"no discarded-event count: the trace has no packet index, and neither "
                               f"`lttng stop` nor `lttng list {name}` gave one")
        if traced_calls and not recorded and not discarded:
            raise RuntimeError(f"no {EVENT} event recorded or discarded in {traced_calls} calls: is {exe} "
                               "built with -DFTRACE_LOOP_LTTNG (build_lttng())?")
        return {
            "base_calls": base_calls,
            "base_cpu_ns": int(base_cpu) if base_cpu else None,
            "traced_cpu_ns": int(traced_cpu) if traced_cpu else None,
            "base_ns": base_ns,
            "hits": traced_calls,
            "traced_ns": traced_ns,
            "recorded": recorded,
            "discarded": discarded,
            "discarded_lttng": discarded_lttng,
            "accounted": recorded + discarded == traced_calls,
            "bytes": size,
            "cost_ns": (traced_ns / traced_calls - base_ns / base_calls) if traced_calls and base_calls else None,
            "trace_dir": str(trace) if keep_trace else None,
        }
    finally:
        if prog is not None:
            prog.kill()
        if created:
            try:
                _run(["lttng", "destroy", name], LTTNG_TIMEOUT)
            except RuntimeError:
                pass
        if not keep_trace:
            shutil.rmtree(trace, ignore_errors=True)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--threads", default="1", help="comma-separated thread counts")
    ap.add_argument("--ms", type=int, default=300, help="the traced loop (with --hits: its longest)")
    ap.add_argument("--base-ms", type=int, default=100)
    ap.add_argument("--hits", type=int, default=0, help="calls in the traced loop, 0: timed by --ms")
    ap.add_argument("--gap-ns", default="0", help="comma-separated GAP_NS values")
    ap.add_argument("--subbuf-size", default="default")
    ap.add_argument("--num-subbuf", type=int)
    ap.add_argument("--keep", action="store_true", help="keep the traces (and print where)")
    args = ap.parse_args()
    why = lttng_available()
    if why:
        print(f"LTTng-UST unavailable: {why}")
        return 1
    workdir = Path(tempfile.mkdtemp(prefix="lttng_anchor."))
    try:
        exe = build_lttng(workdir)
        for threads in map(int, args.threads.split(",")):
            for gap in map(int, args.gap_ns.split(",")):
                try:
                    r = measure_lttng(exe, workdir, threads, args.ms, args.base_ms, args.hits, gap,
                                      args.subbuf_size, args.num_subbuf, keep_trace=args.keep)
                except RuntimeError as e:
                    print(f"threads={threads} gap_ns={gap}: failed: {e}")
                    continue
                base = r["base_ns"] / r["base_calls"]
                traced = r["traced_ns"] / r["hits"] if r["hits"] else float("nan")
                print(f"threads={threads} gap_ns={gap}: base {base:.1f} ns/call, traced {traced:.1f} ns/call, "
                      f"cost {traced - base:.1f} ns/event; hits {r['hits']}, recorded {r['recorded']}, "
                      f"discarded {r['discarded']}"
                      + (f" (lttng says {r['discarded_lttng']})" if r["discarded_lttng"] != r["discarded"] else "")
                      + f", accounted {r['accounted']}, {r['bytes']} B"
                      + (f" in {r['trace_dir']}" if r["trace_dir"] else ""))
    finally:
        if not args.keep:
            shutil.rmtree(workdir, ignore_errors=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
