#!/usr/bin/env python3
"""Branch trace (record btrace) through tpagent: how fast each recording method records
branches, and what it costs the traced program. One run, figures as ratios.

Usage: bench/branch_trace.py TPAGENT_BINARY [ITERATIONS]

The program (bench/programs/branch_loop.c) times a loop of ITERATIONS calls of a function that
branches on its argument. It runs untraced, then recorded (`record btrace bts`) by each
software method (`monitor set btrace-method ...`): block ends (a breakpoint at the next branch,
then a step over it), block steps (the CPU's branch-step flag, where it honours it) and single
steps. `monitor btrace` says how many branches each run
recorded and how many of its steps stopped at a taken branch (with block steps that the CPU
honours, all of them). Prints branches recorded per second and the slowdown of the loop.
"""

import re
import subprocess
import sys
import tempfile
from pathlib import Path

HERE = Path(__file__).resolve().parent
METHODS = {"block ends": "block-ends", "block steps": "block-steps", "single steps": "single-steps"}


def build(workdir: Path) -> Path:
    exe = workdir / "branch_loop"
    subprocess.run(["cc", "-g", "-O1", "-o", str(exe), str(HERE / "programs" / "branch_loop.c")], check=True)
    return exe


def run(tpagent: str, exe: Path, iterations: int, method: str | None, workdir: Path) -> dict:
    script = workdir / "session.gdb"
    lines = [f"target remote | {tpagent} - {exe} {iterations}", "break main", "continue", "break finished"]
    if method is not None:
        lines += [f"monitor set btrace-method {method}",
                  "set record btrace bts buffer-size 67108864", "record btrace bts"]
    lines += ["continue", "print loop_ns", "monitor btrace", "kill"]
    script.write_text("\n".join(lines) + "\n")
    out = subprocess.run(["gdb", "-batch", "-nx", "-iex", "set sysroot /", "-x", str(script), str(exe)],
                         capture_output=True, text=True, timeout=3600)
    text = out.stdout + out.stderr
    ns = re.search(r"^\$1 = (\d+)$", text, re.M)
    if not ns:
        raise SystemExit(f"no timing:\n{text}")
    figures = {"ns": int(ns.group(1))}
    m = re.search(r"(\d+) branches recorded; (\d+) steps, (\d+) of them to a taken branch", text)
    if method is not None:
        if not m:
            raise SystemExit(f"no branch count:\n{text}")
        figures.update(branches=int(m.group(1)), steps=int(m.group(2)), to_branch=int(m.group(3)))
    return figures


def main() -> None:
    if len(sys.argv) < 2:
        raise SystemExit(__doc__)
    tpagent = str(Path(sys.argv[1]).resolve())
    iterations = int(sys.argv[2]) if len(sys.argv) > 2 else 20000
    with tempfile.TemporaryDirectory() as tmp:
        workdir = Path(tmp)
        exe = build(workdir)
        base = min(run(tpagent, exe, iterations, None, workdir)["ns"] for _ in range(3))
        print(f"branch trace, software methods ({iterations} loop iterations, untraced "
              f"{base / iterations:.1f} ns each)")
        print(f"{'method':<14}{'branches':>10}{'steps':>10}{'to branch':>11}{'branches/s':>13}"
              f"{'us/branch':>11}{'slowdown':>11}")
        for label, flag in METHODS.items():
            f = min((run(tpagent, exe, iterations, flag, workdir) for _ in range(2)), key=lambda x: x["ns"])
            per_second = f["branches"] / (f["ns"] / 1e9)
            print(f"{label:<14}{f['branches']:>10}{f['steps']:>10}{f['to_branch'] / f['steps']:>10.0%}"
                  f"{per_second:>13,.0f}{(f['ns'] - base) / f['branches'] / 1000:>11.2f}"
                  f"{f['ns'] / base:>10.0f}x")


if __name__ == "__main__":
    main()
