#!/usr/bin/env python3
"""Cost per line of an agent-style dprintf on a hot function, through gdb, one run:
`dprintf traced_function,"i=%ld\\n", i` over a loop of calls (bench/programs/hits.c), every call
printing a line.

Usage: bench/dprintf.py TPAGENT_BINARY [STOPPING_CALLS [IN_PROGRAM_CALLS]]

Columns (STOPPING_CALLS, 5000 by default, where each line stops the program; IN_PROGRAM_CALLS,
10^6 by default, where the program formats the lines itself):
- tpagent, in the program: `set dprintf-style agent`; the in-process agent formats each line
  into a ring tpagent prints from; the program stops only when the ring (256 lines) is full.
- tpagent, at each stop: the same with `monitor set inproc-breakpoints off`: the thread stops
  at each call and tpagent formats the line.
- gdbserver, agent: the same with GNU gdbserver.
- gdb, gdb style: `set dprintf-style gdb`: every call goes to gdb, which prints.
The lines go where each prints them (a pipe read by this script). The program times its own
loop; the loop without a dprintf is subtracted.
"""

import shutil
import sys
import tempfile
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
from cond_breakpoints import run  # noqa: E402  (one gdb session, its loop time)
from trap_tracepoints import build  # noqa: E402  (the same program, built the same way)


def main() -> None:
    if len(sys.argv) < 2:
        raise SystemExit(__doc__)
    tpagent = str(Path(sys.argv[1]).resolve())
    stopping = int(sys.argv[2]) if len(sys.argv) > 2 else 5000
    in_program = int(sys.argv[3]) if len(sys.argv) > 3 else 1_000_000
    gdbserver = shutil.which("gdbserver")
    dprintf = 'dprintf traced_function,"i=%ld\\n", i'
    agent = "set dprintf-style agent"
    # (label, server, gdb commands at main, calls)
    cases = [("tpagent, in the program", [tpagent], [agent, dprintf], in_program),
             ("tpagent, at each stop", [tpagent],
              ["monitor set inproc-breakpoints off", agent, dprintf], stopping)]
    if gdbserver:
        cases.append(("gdbserver, agent", [gdbserver], [agent, dprintf], stopping))
    cases.append(("gdb, gdb style", [tpagent], ["set dprintf-style gdb", dprintf], stopping))
    with tempfile.TemporaryDirectory() as tmp:
        workdir = Path(tmp)
        exe = build(workdir)
        baselines = {calls: min(run([tpagent], exe, calls, [], workdir) for _ in range(3))
                     for calls in {stopping, in_program}}
        print(f"agent-style dprintf, cost per line ({in_program} lines formatted in the program, "
              f"{stopping} where each stops it; loop alone "
              f"{baselines[in_program] / in_program:.1f} ns/call)")
        costs = {}
        for label, server, setup, calls in cases:
            loop = min(run(server, exe, calls, setup, workdir) for _ in range(2))
            costs[label] = (loop - baselines[calls]) / calls
        mine = costs["tpagent, in the program"]
        for label, cost in costs.items():
            ratio = "" if label == "tpagent, in the program" else f"{cost / mine:.1f}x"
            unit = f"{cost / 1000:10.2f} us" if cost >= 1000 else f"{cost:10.1f} ns"
            print(f"  {label:<26}{unit}   {ratio}")


if __name__ == "__main__":
    main()
