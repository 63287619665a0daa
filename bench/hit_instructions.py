#!/usr/bin/env python3
"""Instructions per fast-tracepoint hit, counted by callgrind: a figure that, unlike the time a
hit takes, is the same on every day of a machine whose speed drifts.

Usage: bench/hit_instructions.py [--build DIR] [--calls N]

Runs build/default/bench/bench_fast_tracepoint (built with `cmake --build --preset default
--target bench_fast_tracepoint`) under `valgrind --tool=callgrind` twice for each in-process
benchmark, for exactly N and 2N calls of the traced function (TPAGENT_BENCH_ITERATIONS, the
"count/" benchmarks), and prints (instructions of the 2N run - those of the N run) / N: what
one call costs, setup and start-up cancelled out. "Over untraced" is that less a call of the
untraced function: the hit's own instructions, the pad's and the agent's.
"""

import argparse
import os
import re
import subprocess
import sys
import tempfile
from pathlib import Path

BENCHMARKS = [
    ("BM_untraced", "untraced call"),
    ("BM_pad_not_tracing", "pad, tracing off"),
    ("BM_floor_stamped_record", "floor: pad + clock + 24-byte record"),
    ("BM_no_collection", "no collection"),
    ("BM_regs", "collect $regs"),
    ("BM_regs_mem64", "collect $regs + 64 B"),
    ("BM_condition_compiled", "condition `if n >= 0`, compiled"),
    ("BM_vector_state", "collect $regs + vector state (XSAVE)"),
]


def instructions(bench: Path, name: str, calls: int) -> int:
    """The instructions callgrind counted in a run of benchmark count/NAME for CALLS calls."""
    with tempfile.TemporaryDirectory() as scratch:
        env = dict(os.environ, TPAGENT_BENCH_ITERATIONS=str(calls))
        run = subprocess.run(
            ["valgrind", "--tool=callgrind", "--smc-check=all",
             f"--callgrind-out-file={scratch}/callgrind.out", str(bench),
             f"--benchmark_filter=^count/{name}/"],
            env=env, capture_output=True, text=True, timeout=600)
    found = re.search(r"Collected\s*:\s*(\d+)", run.stderr)
    if run.returncode != 0 or not found:
        sys.exit(f"{name}: valgrind failed ({run.returncode}):\n{run.stderr[-2000:]}")
    # A name the benchmark does not know matches nothing and would count as 0 per call.
    if f"count/{name}/iterations:{calls}" not in run.stdout:
        sys.exit(f"{name}: the benchmark ran no count/{name} for {calls} calls:\n{run.stdout[-2000:]}")
    return int(found.group(1))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--build", default="build/default", type=Path)
    parser.add_argument("--calls", default=20000, type=int)
    args = parser.parse_args()
    bench = args.build / "bench" / "bench_fast_tracepoint"
    if not bench.exists():
        sys.exit(f"{bench} not found: cmake --build --preset default --target bench_fast_tracepoint")
    per_call = {}
    for name, _ in BENCHMARKS:
        once = instructions(bench, name, args.calls)
        twice = instructions(bench, name, 2 * args.calls)
        per_call[name] = (twice - once) / args.calls
    untraced = per_call["BM_untraced"]
    print(f"Instructions per call, callgrind, {args.calls} and {2 * args.calls} calls")
    print()
    print("| benchmark | per call | over untraced |")
    print("|---|---|---|")
    for name, label in BENCHMARKS:
        over = "" if name == "BM_untraced" else f"{per_call[name] - untraced:.0f}"
        print(f"| {label} | {per_call[name]:.0f} | {over} |")


if __name__ == "__main__":
    main()
