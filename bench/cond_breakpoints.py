#!/usr/bin/env python3
"""Cost per call of a never-true conditional breakpoint on a hot function, through gdb, one run:
`break traced_function if i == -1` over a loop of calls (bench/programs/hits.c).

Usage: bench/cond_breakpoints.py TPAGENT_BINARY [STOPPING_CALLS [IN_PROGRAM_CALLS]]

Columns (STOPPING_CALLS, 5000 by default, where each call stops the program; IN_PROGRAM_CALLS,
10^7 by default, where none does):
- tpagent, in the program: `set breakpoint condition-evaluation target`; tpagent compiles the
  condition and runs it in the program, from a pad a jump replacing the instruction leads to
  (the in-process agent placed at the breakpoint's insertion); no call stops.
- tpagent, at each stop: the same with `monitor set inproc-breakpoints off`: the thread stops,
  tpagent reads its registers, runs the agent expression and sends it on through the
  instruction's pad; gdb sees no hit.
- gdbserver, target: the same with GNU gdbserver evaluating it.
- gdb, host: `condition-evaluation host`: every hit goes to gdb and back (through tpagent).
- fast tracepoint: for scale, tpagent's fast tracepoint at the same function, no actions
  (`--inproc`), IN_PROGRAM_CALLS calls.
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


def arguments(usage: str, in_program: int) -> tuple[str, int, int, str | None]:
    """TPAGENT_BINARY [STOPPING_CALLS [IN_PROGRAM_CALLS]] from the command line (5000 and
    `in_program` by default), and where gdbserver is (None: not here)."""
    if len(sys.argv) < 2:
        raise SystemExit(usage)
    tpagent = str(Path(sys.argv[1]).resolve())
    stopping = int(sys.argv[2]) if len(sys.argv) > 2 else 5000
    in_program = int(sys.argv[3]) if len(sys.argv) > 3 else in_program
    return tpagent, stopping, in_program, shutil.which("gdbserver")


def main() -> None:
    tpagent, stopping, in_program, gdbserver = arguments(__doc__, 10_000_000)
    breakpoint = "break traced_function if i == -1"
    target = "set breakpoint condition-evaluation target"
    # (label, server, gdb commands at main, calls)
    cases = [("tpagent, in the program", [tpagent], [target, breakpoint], in_program),
             ("tpagent, at each stop", [tpagent],
              ["monitor set inproc-breakpoints off", target, breakpoint], stopping)]
    if gdbserver:
        cases.append(("gdbserver, target", [gdbserver], [target, breakpoint], stopping))
    cases.append(("gdb, host", [tpagent], ["set breakpoint condition-evaluation host", breakpoint],
                  stopping))
    cases.append(("fast tracepoint", [tpagent, "--inproc"], ["ftrace traced_function", "tstart"],
                  in_program))
    compare(tpagent, cases, stopping, in_program,
            "never-true conditional breakpoint, cost per call ({in_program} calls where none "
            "stops, {stopping} where each does; loop alone {loop:.1f} ns/call)")


def compare(tpagent: str, cases: list, stopping: int, in_program: int, title: str,
            runner=run) -> None:
    """Runs each (label, server, gdb commands at main, calls) case twice with `runner` (run's
    signature), subtracts the loop alone, and prints the cost per call against the first
    case's; `title` formatted with in_program, stopping and loop (ns per call of the loop
    alone)."""
    with tempfile.TemporaryDirectory() as tmp:
        workdir = Path(tmp)
        exe = build(workdir)
        baselines = {calls: min(runner([tpagent], exe, calls, [], workdir) for _ in range(3))
                     for calls in {stopping, in_program}}
        print(title.format(in_program=in_program, stopping=stopping,
                           loop=baselines[in_program] / in_program))
        costs = {}
        for label, server, setup, calls in cases:
            loop = min(runner(server, exe, calls, setup, workdir) for _ in range(2))
            costs[label] = (loop - baselines[calls]) / calls
        first = cases[0][0]
        mine = costs[first]
        for label, cost in costs.items():
            ratio = ""
            if label != first:
                times = cost / mine
                ratio = (f"{times:.1f}x {first}" if times >= 1
                         else f"1/{1 / times:.1f} of {first}")
            unit = f"{cost / 1000:10.2f} us" if cost >= 1000 else f"{cost:10.1f} ns"
            print(f"  {label:<26}{unit}   {ratio}")


if __name__ == "__main__":
    main()
