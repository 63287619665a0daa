#!/usr/bin/env python3
"""Cost per hit of a trap tracepoint, tpagent against GNU gdbserver, same gdb script, one run.

Usage: bench/trap_tracepoints.py TPAGENT_BINARY [HITS]

For each server and each action list (none; collect $regs) the program below runs HITS calls
of a traced function under `tstart`; the program times its own loop, and the untraced loop time
is subtracted. Prints microseconds per hit and the ratio gdbserver / tpagent.
"""

import os
import re
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

HERE = Path(__file__).resolve().parent
ACTIONS = {"no collection": [], "collect $regs": ["collect $regs"]}


def build(workdir: Path) -> Path:
    exe = workdir / "hits"
    subprocess.run(["cc", "-g", "-O1", "-o", str(exe), str(HERE / "programs" / "hits.c")], check=True)
    return exe


def run(server: list[str], exe: Path, hits: int, actions: list[str] | None, workdir: Path) -> int:
    """Loop time in ns with a tracepoint (actions list) or without one (None)."""
    script = workdir / "session.gdb"
    lines = [f"target remote | {' '.join(server)} - {exe} {hits}", "break main", "continue"]
    if actions is not None:
        lines += ["trace traced_function", "actions", *actions, "end", "tstart"]
    lines += ["continue"]
    script.write_text("\n".join(lines) + "\n")
    out = subprocess.run(
        ["gdb", "-batch", "-nx", "-iex", "set sysroot /", "-x", str(script), str(exe)],
        capture_output=True, text=True, timeout=600,
    )
    text = out.stdout + out.stderr
    m = re.search(r"loop_ns=(\d+)", text)
    if not m:
        raise SystemExit(f"no timing from {server[0]}:\n{text}")
    return int(m.group(1))


def main() -> None:
    if len(sys.argv) < 2:
        raise SystemExit(__doc__)
    tpagent = str(Path(sys.argv[1]).resolve())
    hits = int(sys.argv[2]) if len(sys.argv) > 2 else 2000
    gdbserver = shutil.which("gdbserver")
    with tempfile.TemporaryDirectory() as tmp:
        workdir = Path(tmp)
        exe = build(workdir)
        servers = {"tpagent": [tpagent]}
        if gdbserver:
            servers["gdbserver"] = [gdbserver]
        baseline = min(run([tpagent], exe, hits, None, workdir) for _ in range(3))
        print(f"trap tracepoint cost per hit ({hits} hits, untraced loop {baseline / hits:.0f} ns/call)")
        print(f"{'actions':<16}" + "".join(f"{name:>14}" for name in servers) + "   gdbserver/tpagent")
        for label, actions in ACTIONS.items():
            per_hit = {}
            for name, server in servers.items():
                loop = min(run(server, exe, hits, actions, workdir) for _ in range(2))
                per_hit[name] = (loop - baseline) / hits / 1000.0
            row = f"{label:<16}" + "".join(f"{per_hit[n]:>11.1f} us" for n in servers)
            if "gdbserver" in per_hit:
                row += f"   {per_hit['gdbserver'] / per_hit['tpagent']:.1f}x"
            print(row)


if __name__ == "__main__":
    main()
