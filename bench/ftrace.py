#!/usr/bin/env python3
"""Cost per hit of a fast tracepoint (gdb `ftrace`), tpagent against GNU gdbserver with its
in-process agent libinproctrace.so: the same gdb script, the same program, one run.

Usage: bench/ftrace.py [--tpagent PATH] [--tpagent-lib PATH] [--ms MS] [--base-ms MS]
                       [--repeat R] [--buffer-mib M]

programs/ftrace_loop.c runs T threads that call traced() in a loop for --base-ms untraced,
then, after ready() (where gdb runs `tstart`), for --ms traced; the program counts the calls
and times both loops itself, in the same process. The loops run for a time rather than a count,
so a run lasts the same whatever a hit costs.
Cost per hit = traced loop time / traced calls - untraced loop time / untraced calls;
throughput = traced calls / traced loop time. The trace buffer is circular, so collection goes
on for the whole loop; every run prints the frames created, which must equal the traced calls.
Each figure is the median of R runs.

Columns: gdbserver + libinproctrace on a non-PIE build (its jump pads must be within 2 GiB of
the code), tpagent on the same build, tpagent on a PIE build. Both servers start the program
through `--wrapper env LD_PRELOAD=<in-process library> --`; tpagent's library is
libtpagent-inproc.so next to the tpagent binary unless --tpagent-lib says otherwise.
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


@dataclass
class Case:
    label: str
    actions: list[str]
    condition: str | None = None
    threads: int = 1


CASES = {
    "none": Case("no collection", []),
    "regs": Case("`collect $regs`", ["collect $regs"]),
    "regs+mem": Case("`collect $regs` + 64 B (`collect $regs, buf`)", ["collect $regs, buf"]),
    "cond": Case("condition `if n >= 0` (always true), no collection", [], "n >= 0"),
    "regs2": Case("`collect $regs`, 2 threads", ["collect $regs"], threads=2),
}


class RunFailed(Exception):
    pass


@dataclass
class Server:
    name: str
    command: list[str]  # up to and including the wrapper's `--`
    exe: Path
    error: str | None = None  # set when the whole column cannot run
    results: dict[str, list[dict]] = field(default_factory=dict)
    failures: dict[str, str] = field(default_factory=dict)


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


def run(server: Server, case: Case, args, workdir: Path) -> dict:
    script = workdir / "session.gdb"
    tracepoint = "ftrace traced" + (f" if {case.condition}" if case.condition else "")
    lines = [
        "set sysroot /",
        "set pagination off",
        "set confirm off",
        f"target remote | {' '.join(server.command)} - {server.exe} {args.ms} {case.threads} {args.base_ms}",
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
        'printf "base_calls=%ld base_ns=%ld traced_calls=%ld traced_ns=%ld\\n", '
        "base_calls, base_ns, traced_calls, traced_ns",
        "tstatus",
        "info tracepoints",
        "tstop",
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
    return {"base_calls": base_calls, "base_ns": base_ns, "hits": hits, "traced_ns": traced_ns, "frames": frames, "kept": kept}


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
        if server.error:  # a timeout: don't wait that long for every cell
            server.failures[key] = server.error
            continue
        runs = []
        for i in range(args.repeat):
            try:
                r = run(server, case, args, workdir)
            except RunFailed as e:
                server.failures[key] = f"failed: {e}"
                print(f"{server.name} | {case.label} | run {i + 1}: failed: {e}", flush=True)
                if "timed out" in str(e):
                    server.error = f"skipped after a timeout in {case.label}"
                break
            runs.append(r)
            check = "" if r["frames"] == r["hits"] else "  <-- frames created != hits"
            print(
                f"{server.name} | {case.label} | run {i + 1}: untraced {r['base_ns'] / r['base_calls']:.1f} ns/call, "
                f"traced {r['hits']} hits in {r['traced_ns'] / 1e6:.0f} ms, {per_hit_ns(r):.1f} ns/hit, "
                f"frames created {r['frames']} ({r['kept']} in the buffer){check}",
                flush=True,
            )
        if len(runs) == args.repeat:
            server.results[key] = runs


def fmt_ns(v: float) -> str:
    return f"{v:.1f} ns" if abs(v) < 100 else f"{v:,.0f} ns"


def cell(server: Server, key: str, value) -> tuple[str, float | None]:
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
    parser.add_argument("--ms", type=int, default=400, help="traced loop length in ms (default 400)")
    parser.add_argument("--base-ms", type=int, default=100, help="untraced loop length in ms (default 100)")
    parser.add_argument("--repeat", type=int, default=5, help="runs per figure, median taken (default 5)")
    parser.add_argument("--buffer-mib", type=int, default=16, help="circular trace buffer size (default 16 MiB)")
    args = parser.parse_args()

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
        for s in (tp, tp_pie):
            if not tpagent.exists():
                s.error = f"failed: {tpagent} not found"
            elif not tplib.exists():
                s.error = f"failed: {tplib.name} not found next to tpagent"
        servers = [gs, tp, tp_pie]
        for s in servers:
            measure(s, args, workdir)

    def ns_row(key: str, target: str) -> list[str]:
        cells, values = [], []
        for s in servers:
            note, v = cell(s, key, per_hit_ns)
            values.append(v)
            cells.append(note if v is None else fmt_ns(v) + note)
        ratio = f"{values[0] / values[1]:.1f}x" if values[0] is not None and values[1] else ""
        return [CASES[key].label, *cells, ratio, target]

    def tput_row(label: str, key: str, target: str) -> tuple[list[str], list[float | None]]:
        cells, values = [], []
        for s in servers:
            note, v = cell(s, key, mhits_per_s)
            values.append(v)
            cells.append(note if v is None else f"{v:.2f} M/s" + note)
        ratio = f"{values[1] / values[0]:.1f}x" if values[0] and values[1] is not None else ""
        return [label, *cells, ratio, target], values

    rows = [
        ns_row("none", ""),
        ns_row("regs", ""),
        ns_row("regs+mem", "tpagent ≤ 25 ns; gdbserver/tpagent ≥ 3x"),
        ns_row("cond", ""),
    ]
    r1, one = tput_row("`collect $regs`, 1 thread: hits per second", "regs", "")
    r2, two = tput_row("`collect $regs`, 2 threads: hits per second (both)", "regs2", "")
    scaling = [f"{b / a:.2f}x" if a and b else "n/a" for a, b in zip(one, two)]
    rows += [r1, r2, ["2 threads / 1 thread (throughput)", *scaling, "", "≥ 1.8x"]]
    # The same ratio for the untraced loop: near 2x only if the machine had two idle cores.
    machine = []
    for s in servers:
        a, b = cell(s, "regs", untraced_mcalls_per_s)[1], cell(s, "regs2", untraced_mcalls_per_s)[1]
        machine.append(f"{b / a:.2f}x" if a and b else "n/a")
    rows.append(["untraced loop, 2 threads / 1 thread (free cores check)", *machine, "", "≈ 2x"])

    versions = subprocess.run(["gdb", "--version"], capture_output=True, text=True).stdout.splitlines()[0]
    print()
    print(f"fast tracepoint cost per hit, {versions}, circular {args.buffer_mib} MiB trace buffer, "
          f"median of {args.repeat} runs, {time.monotonic() - started:.0f} s in all")
    print(f"tpagent: {tpagent}, in-process library {tplib}")
    print()
    header = ["", "gdbserver + libinproctrace", "tpagent", "tpagent, PIE", "gdbserver / tpagent", "target"]
    print("| " + " | ".join(header) + " |")
    print("|" + "---|" * len(header))
    for row in rows:
        print("| " + " | ".join(row) + " |")


if __name__ == "__main__":
    main()
