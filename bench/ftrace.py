#!/usr/bin/env python3
"""Cost per hit of a fast tracepoint (gdb `ftrace`), tpagent against GNU gdbserver with its
in-process agent libinproctrace.so: the same gdb script, the same program, one run.

Usage: bench/ftrace.py [--tpagent PATH] [--tpagent-lib PATH] [--hits N] [--ms MS]
                       [--base-ms MS] [--threads 1,2,4] [--repeat R] [--buffer-mib M]

programs/ftrace_loop.c runs T threads (each count in --threads) that call traced() in a loop for
--base-ms untraced, then, after ready() (where gdb runs `tstart`), traced until they have made
--hits calls in all (--hits / T each), or for at most --ms; with --hits 0, for --ms. The program
counts the calls and times both loops itself, in the same process. The untraced loop runs for a
time rather than a count, so it lasts the same whatever a call costs.
Cost per hit = traced loop time / traced calls - untraced loop time / untraced calls, in wall
time: with T threads, that of all of them together (the inverse of the throughput);
throughput = traced calls / traced loop time, and its T threads / 1 thread ratio says how
collection scales. The trace buffer is circular, so collection goes on for the whole loop;
every run prints the frames created, which must equal the traced calls.
Each figure is the median of R runs.

Columns: gdbserver + libinproctrace on a non-PIE build (its jump pads must be within 2 GiB of
the code), tpagent on the same build, tpagent on a PIE build. Both servers start the program
through `--wrapper env LD_PRELOAD=<in-process library> --`; tpagent's library is
libtpagent-inproc.so next to the tpagent binary unless --tpagent-lib says otherwise. Last,
tpagent attached to the PIE build started on its own, without the library, which tpagent then
loads into it at tstart (--attach; --inproc=LIB names the library).
A column or a cell that fails prints "failed: <reason>".
"""

import argparse
import os
import re
import shutil
import signal
import statistics
import subprocess
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path

HERE = Path(__file__).resolve().parent
REPO = HERE.parent
IPA = Path("/usr/lib/libinproctrace.so")
RUN_TIMEOUT = 120
# --ms's default: the traced loop's length with --hits 0, else the longest it may take.
TIMED_MS, LONGEST_MS = 400, 20000


@dataclass
class Case:
    label: str
    actions: list[str]
    condition: str | None = None


CASES = {
    "none": Case("no collection", []),
    "regs": Case("`collect $regs`", ["collect $regs"]),
    "regs+mem": Case("`collect $regs` + 64 B (`collect $regs, buf`)", ["collect $regs, buf"]),
    "cond": Case("condition `if n >= 0` (always true), no collection", [], "n >= 0"),
}


class RunFailed(Exception):
    pass


@dataclass
class Server:
    name: str
    command: list[str]  # up to and including the wrapper's `--`
    exe: Path
    error: str | None = None  # set when the whole column cannot run
    # The program is started without the agent and waits; the server attaches to it
    # (command: up to --attach) and loads the agent at tstart.
    attach: bool = False
    # Keyed by (case, threads).
    results: dict[tuple[str, int], list[dict]] = field(default_factory=dict)
    failures: dict[tuple[str, int], str] = field(default_factory=dict)


def build(workdir: Path) -> dict[str, Path]:
    src = HERE / "programs" / "ftrace_loop.c"
    flags = ["cc", "-g", "-O1", "-fcf-protection=none", "-pthread"]
    exes = {"nopie": workdir / "ftrace_loop", "pie": workdir / "ftrace_loop_pie"}
    subprocess.run([*flags, "-fno-pie", "-no-pie", "-o", str(exes["nopie"]), str(src)], check=True)
    subprocess.run([*flags, "-fpie", "-pie", "-o", str(exes["pie"]), str(src)], check=True)
    return exes


def reason(text: str) -> str:
    """The most telling gdb line of a failed session."""
    lines = [ln.strip() for ln in text.splitlines() if ln.strip()]
    for pattern in (r"Error in sourced command file", r"^warning: .*(fast|regular|tracepoint)", r"rror|annot|not "):
        for i, ln in enumerate(lines):
            if re.search(pattern, ln):
                if pattern.startswith("Error") and i + 1 < len(lines):
                    return lines[i + 1][:160]
                return ln[:160]
    return (lines[-1] if lines else "no output")[:160]


def run(server: Server, case: Case, threads: int, args, workdir: Path) -> dict:
    script = workdir / "session.gdb"
    tracepoint = "ftrace traced" + (f" if {case.condition}" if case.condition else "")
    program = [str(server.exe), str(args.ms), str(threads), str(args.base_ms), str(args.hits)]
    if getattr(args, "gap_ns", 0):  # bench/record.py: the calls throttled (programs/ftrace_loop.c)
        program.append(str(args.gap_ns))
    attached = None
    if server.attach:
        attached = subprocess.Popen(program, env={**os.environ, "FTRACE_LOOP_WAIT": "1"}, stdin=subprocess.DEVNULL,
                                    stdout=subprocess.PIPE, text=True, start_new_session=True)
        if attached.stdout.readline().strip() != "waiting":
            attached.kill()
            attached.wait()
            raise RunFailed("the program to attach to did not start")
        connect = [f"target remote | {' '.join(server.command)} - {attached.pid}", "set var waiting = 0"]
    else:
        connect = [f"target remote | {' '.join(server.command)} - {' '.join(program)}"]
    lines = [
        "set sysroot /",
        "set pagination off",
        "set confirm off",
        *connect,
        "break ready",
        "break done",
        "continue",
        "set circular-trace-buffer on",
        f"set trace-buffer-size {args.buffer_mib << 20}",
        tracepoint,
    ]
    if case.actions:
        lines += ["actions", *case.actions, "end"]
    lines += [
        "tstart",
        "continue",
        'printf "base_calls=%ld base_ns=%ld traced_calls=%ld traced_ns=%ld base_cpu_ns=%ld traced_cpu_ns=%ld\\n", '
        "base_calls, base_ns, traced_calls, traced_ns, base_cpu_ns, traced_cpu_ns",
        "tstatus",
        "info tracepoints",
        "tstop",
        "tstatus",  # bench/record.py: the recording's last counts
        *getattr(args, "after_tstop", []),
        "kill",
    ]
    script.write_text("\n".join(lines) + "\n")
    proc = subprocess.Popen(
        ["gdb", "-batch", "-nx", "-x", str(script), str(server.exe)],
        stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
        start_new_session=True,
    )
    try:
        text, _ = proc.communicate(timeout=RUN_TIMEOUT)
    except subprocess.TimeoutExpired:
        os.killpg(proc.pid, signal.SIGKILL)  # gdb's own session: gdb, the server, the program
        proc.communicate()
        raise RunFailed(f"timed out after {RUN_TIMEOUT} s")
    finally:
        if attached:  # gdb's kill ended it, unless something failed first
            if attached.poll() is None:
                os.killpg(attached.pid, signal.SIGKILL)
            attached.wait()
    if m := re.search(r"warning: .*(regular tracepoint|fast tracepoint).*", text):
        raise RunFailed(m.group(0)[:160])
    m = re.search(r"base_calls=(\d+) base_ns=(\d+) traced_calls=(\d+) traced_ns=(\d+)", text)
    if not m:
        raise RunFailed(reason(text))
    if "\tinstalled on target" not in text:
        raise RunFailed("tracepoint not installed on target: " + reason(text))
    if m2 := re.search(r"Buffer contains (\d+) trace frames \(of (\d+) created total\)", text):
        kept, frames = int(m2.group(1)), int(m2.group(2))
    elif m2 := re.search(r"Collected (\d+) trace frames", text):
        kept = frames = int(m2.group(1))
    else:
        raise RunFailed("tstatus shows no frames: " + reason(text))
    base_calls, base_ns, hits, traced_ns = map(int, m.groups())
    if not base_calls or not hits:
        raise RunFailed("the program made no calls")
    cpu = re.search(r"base_cpu_ns=(\d+) traced_cpu_ns=(\d+)", text)
    return {"base_calls": base_calls, "base_ns": base_ns, "hits": hits, "traced_ns": traced_ns, "frames": frames, "kept": kept,
            "base_cpu_ns": int(cpu.group(1)) if cpu else None, "traced_cpu_ns": int(cpu.group(2)) if cpu else None,
            "text": text}


def per_hit_ns(r: dict) -> float:
    """Wall time per traced call minus wall time per untraced call."""
    return r["traced_ns"] / r["hits"] - r["base_ns"] / r["base_calls"]


def mhits_per_s(r: dict) -> float:
    return r["hits"] / r["traced_ns"] * 1000.0


def untraced_mcalls_per_s(r: dict) -> float:
    return r["base_calls"] / r["base_ns"] * 1000.0


def measure(server: Server, args, workdir: Path) -> None:
    if server.error:
        return
    for key, case in CASES.items():
        for threads in args.threads:
            cell_key, what = (key, threads), f"{case.label}, {threads_label(threads)}"
            if server.error:  # a timeout: don't wait that long for every cell
                server.failures[cell_key] = server.error
                continue
            runs = []
            for i in range(args.repeat):
                try:
                    r = run(server, case, threads, args, workdir)
                except RunFailed as e:
                    server.failures[cell_key] = f"failed: {e}"
                    print(f"{server.name} | {what} | run {i + 1}: failed: {e}", flush=True)
                    if "timed out" in str(e):
                        server.error = f"skipped after a timeout in {what}"
                    break
                runs.append(r)
                check = "" if r["frames"] == r["hits"] else "  <-- frames created != hits"
                print(
                    f"{server.name} | {what} | run {i + 1}: untraced {r['base_ns'] / r['base_calls']:.2f} ns/call, "
                    f"traced {r['hits']} hits in {r['traced_ns'] / 1e6:.0f} ms, {per_hit_ns(r):.1f} ns/hit, "
                    f"frames created {r['frames']} ({r['kept']} in the buffer){check}",
                    flush=True,
                )
            if len(runs) == args.repeat:
                server.results[cell_key] = runs


def threads_label(threads: int) -> str:
    return f"{threads} thread" + ("s" if threads > 1 else "")


def thread_counts(text: str) -> list[int]:
    counts = [int(n) for n in text.split(",")]
    if not counts or min(counts) < 1 or max(counts) > 16:
        raise argparse.ArgumentTypeError("thread counts from 1 to 16, comma-separated")
    return counts


def fmt_ns(v: float) -> str:
    return f"{v:.1f} ns" if abs(v) < 100 else f"{v:,.0f} ns"


def cell(server: Server, key: tuple[str, int], value) -> tuple[str, float | None]:
    if key in server.failures:
        return server.failures[key], None
    runs = server.results.get(key)
    if not runs:
        return server.error or "n/a", None
    v = statistics.median(value(r) for r in runs)
    bad = [r for r in runs if abs(r["frames"] - r["hits"]) > r["hits"] // 100]  # the log shows any difference
    note = f" (frames created {bad[0]['frames']} of {bad[0]['hits']} hits)" if bad else ""
    return note, v


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    default_tp = next(
        (p for p in (REPO / "build/release/bin/tpagent", REPO / "build/default/bin/tpagent") if p.exists()),
        REPO / "build/default/bin/tpagent",
    )
    parser.add_argument("--tpagent", type=Path, default=default_tp, help=f"tpagent binary (default {default_tp})")
    parser.add_argument("--tpagent-lib", type=Path, help="in-process library (default: libtpagent-inproc.so next to tpagent)")
    parser.add_argument("--hits", type=int, default=1_000_000,
                        help="calls the traced loop makes, all threads together (default 10^6; 0: run for --ms)")
    parser.add_argument("--ms", type=int, help=f"traced loop length in ms with --hits 0 (default {TIMED_MS}), "
                        f"else the longest it may take (default {LONGEST_MS})")
    parser.add_argument("--base-ms", type=int, default=100, help="untraced loop length in ms (default 100)")
    parser.add_argument("--threads", type=thread_counts, default=[1, 2, 4],
                        help="thread counts to measure, the first being the base of the ratios (default 1,2,4)")
    parser.add_argument("--repeat", type=int, default=5, help="runs per figure, median taken (default 5)")
    parser.add_argument("--buffer-mib", type=int, default=16, help="circular trace buffer size (default 16 MiB)")
    args = parser.parse_args()
    if args.ms is None:
        args.ms = LONGEST_MS if args.hits else TIMED_MS

    tpagent = args.tpagent.resolve()
    tplib = (args.tpagent_lib or tpagent.parent / "libtpagent-inproc.so").resolve()
    gdbserver = shutil.which("gdbserver")
    started = time.monotonic()
    with tempfile.TemporaryDirectory() as tmp:
        workdir = Path(tmp)
        exes = build(workdir)
        gs = Server("gdbserver", [gdbserver or "gdbserver", "--wrapper", "env", f"LD_PRELOAD={IPA}", "--"], exes["nopie"])
        if not gdbserver:
            gs.error = "failed: no gdbserver on PATH"
        elif not IPA.exists():
            gs.error = f"failed: {IPA} not found"
        tp_cmd = [str(tpagent), "--wrapper", "env", f"LD_PRELOAD={tplib}", "--"]
        tp = Server("tpagent", tp_cmd, exes["nopie"])
        tp_pie = Server("tpagent PIE", tp_cmd, exes["pie"])
        tp_attached = Server("tpagent PIE attached", [str(tpagent), f"--inproc={tplib}", "--attach"], exes["pie"],
                             attach=True)
        for s in (tp, tp_pie, tp_attached):
            if not tpagent.exists():
                s.error = f"failed: {tpagent} not found"
            elif not tplib.exists():
                s.error = f"failed: {tplib.name} not found next to tpagent"
        servers = [gs, tp, tp_pie, tp_attached]
        for s in servers:
            measure(s, args, workdir)

    def ns_row(key: str, threads: int, target: str) -> list[str]:
        cells, values = [], []
        for s in servers:
            note, v = cell(s, (key, threads), per_hit_ns)
            values.append(v)
            cells.append(note if v is None else fmt_ns(v) + note)
        ratio = f"{values[0] / values[1]:.1f}x" if values[0] is not None and values[1] else ""
        return [f"{CASES[key].label}, {threads_label(threads)}", *cells, ratio, target]

    def scaling_row(label: str, threads: int, throughput, target: str) -> list[str]:
        """THROUGHPUT(server, threads) with THREADS over the same with the first thread count."""
        cells = []
        for s in servers:
            a, b = throughput(s, base), throughput(s, threads)
            cells.append(f"{b / a:.2f}x" if a and b else "n/a")
        return [f"{label}: {threads_label(threads)} / {threads_label(base)} (throughput)", *cells, "", target]

    def traced(key: str):
        return lambda s, threads: cell(s, (key, threads), mhits_per_s)[1]

    def untraced(s: Server, threads: int) -> float | None:
        """The untraced loop's throughput, over every case's runs with THREADS."""
        runs = [r for (_, t), rs in s.results.items() if t == threads for r in rs]
        return statistics.median(untraced_mcalls_per_s(r) for r in runs) if runs else None

    base = args.threads[0]
    rows = []
    for key, case in CASES.items():
        for threads in args.threads:
            target = "tpagent ≤ 25 ns; gdbserver/tpagent ≥ 3x" if (key, threads) == ("regs+mem", 1) else ""
            rows.append(ns_row(key, threads, target))
        for threads in args.threads[1:]:
            target = "≥ 1.8x" if (key, base, threads) == ("regs", 1, 2) else ""
            rows.append(scaling_row(case.label, threads, traced(key), target))
    # The same ratio for the untraced loop: as many times one thread's as there were idle cores.
    cores = os.cpu_count() or 1
    for threads in args.threads[1:]:
        ideal = min(threads, cores) / min(base, cores)
        rows.append(scaling_row("untraced loop (free cores check)", threads, untraced, f"≈ {ideal:g}x"))

    versions = subprocess.run(["gdb", "--version"], capture_output=True, text=True).stdout.splitlines()[0]
    print()
    loop = f"{args.hits:,} hits per run (at most {args.ms} ms)" if args.hits else f"{args.ms} ms traced per run"
    print(f"fast tracepoint cost per hit, {versions}, circular {args.buffer_mib} MiB trace buffer, {loop}, "
          f"median of {args.repeat} runs, {time.monotonic() - started:.0f} s in all")
    print(f"tpagent: {tpagent}, in-process library {tplib}")
    print()
    header = ["", "gdbserver + libinproctrace", "tpagent", "tpagent, PIE", "tpagent, PIE, attached",
              "gdbserver / tpagent", "target"]
    print("| " + " | ".join(header) + " |")
    print("|" + "---|" * len(header))
    for row in rows:
        print("| " + " | ".join(row) + " |")


if __name__ == "__main__":
    main()
