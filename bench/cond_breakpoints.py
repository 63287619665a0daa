#!/usr/bin/env python3
"""Cost per call of a never-true conditional breakpoint on a hot function, through gdb, one run:
`break traced_function if i == -1` over a loop of CALLS calls (bench/programs/hits.c).

Usage: bench/cond_breakpoints.py TPAGENT_BINARY [CALLS]

Columns:
- tpagent, target: `set breakpoint condition-evaluation target`; tpagent evaluates the
  condition at each hit (the thread stops, tpagent reads its registers, runs the agent
  expression and sends it on through the instruction's pad), gdb sees no hit.
- gdbserver, target: the same with GNU gdbserver evaluating it.
- gdb, host: `condition-evaluation host`: every hit goes to gdb and back (through tpagent).
- fast tracepoint: for scale, tpagent's fast tracepoint at the same function, no actions
  (`--inproc`), the cost a breakpoint evaluated inside the program would aim at.
The program times its own loop; the loop without a breakpoint is subtracted.
"""

import re
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
from trap_tracepoints import build  # noqa: E402  (the same program, built the same way)


def run(server: list[str], exe: Path, calls: int, setup: list[str], workdir: Path) -> int:
    """Loop time in ns with SETUP's gdb commands given at main."""
    script = workdir / "session.gdb"
    lines = [f"target remote | {' '.join(server)} - {exe} {calls}", "break main", "continue",
             "delete", *setup, "continue"]
    script.write_text("\n".join(lines) + "\n")
    out = subprocess.run(
        ["gdb", "-batch", "-nx", "-iex", "set sysroot /", "-x", str(script), str(exe)],
        capture_output=True, text=True, timeout=3600,
    )
    text = out.stdout + out.stderr
    m = re.search(r"loop_ns=(\d+)", text)
    if not m:
        raise SystemExit(f"no timing from {' '.join(server)} {setup}:\n{text}")
    if "does not support" in text:
        raise SystemExit(f"{server[0]} refused target evaluation:\n{text}")
    return int(m.group(1))


def main() -> None:
    if len(sys.argv) < 2:
        raise SystemExit(__doc__)
    tpagent = str(Path(sys.argv[1]).resolve())
    calls = int(sys.argv[2]) if len(sys.argv) > 2 else 20000
    gdbserver = shutil.which("gdbserver")
    breakpoint = "break traced_function if i == -1"
    cases = [("tpagent, target", [tpagent], ["set breakpoint condition-evaluation target", breakpoint])]
    if gdbserver:
        cases.append(("gdbserver, target", [gdbserver],
                      ["set breakpoint condition-evaluation target", breakpoint]))
    cases.append(("gdb, host", [tpagent], ["set breakpoint condition-evaluation host", breakpoint]))
    cases.append(("fast tracepoint", [tpagent, "--inproc"], ["ftrace traced_function", "tstart"]))
    with tempfile.TemporaryDirectory() as tmp:
        workdir = Path(tmp)
        exe = build(workdir)
        baseline = min(run([tpagent], exe, calls, [], workdir) for _ in range(3))
        print(f"never-true conditional breakpoint, cost per call ({calls} calls, "
              f"loop alone {baseline / calls:.1f} ns/call)")
        costs = {}
        for label, server, setup in cases:
            loop = min(run(server, exe, calls, setup, workdir) for _ in range(2))
            costs[label] = (loop - baseline) / calls
        for label, cost in costs.items():
            ratio = ""
            if label != "tpagent, target":
                times = cost / costs["tpagent, target"]
                ratio = f"{times:.1f}x tpagent's" if times >= 1 else f"1/{1 / times:.0f} of tpagent's"
            unit = f"{cost / 1000:10.2f} us" if cost >= 1000 else f"{cost:10.1f} ns"
            print(f"  {label:<20}{unit}   {ratio}")


if __name__ == "__main__":
    main()
