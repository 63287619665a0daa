#!/usr/bin/env python3
"""Cost per line of an agent-style dprintf on a hot function, through gdb, one run:
`dprintf traced_function,"i=%ld\\n", i` over a loop of calls (bench/programs/hits.c), every call
printing a line.

Usage: bench/dprintf.py TPAGENT_BINARY [STOPPING_CALLS [IN_PROGRAM_CALLS]]

Columns (STOPPING_CALLS, 5000 by default, where each line stops the program; IN_PROGRAM_CALLS,
10^6 by default, where the program formats the lines itself):
- tpagent, in the program: `set dprintf-style agent`; the in-process agent formats each line
  into a ring tpagent prints from; the program stops only when the ring (2048 lines) is full.
- tpagent, at each stop: the same with `monitor set inproc-breakpoints off`: the thread stops
  at each call and tpagent formats the line.
- gdbserver, agent: the same with GNU gdbserver.
- gdb, gdb style: `set dprintf-style gdb`: every call goes to gdb, which prints.
Each server listens on a TCP port with its standard output and error in a file, where the
stubs print the lines (through `target remote | STUB -`, gdb would copy each line from the
stub's standard error itself, and time that). The program times its own loop; the loop
without a dprintf is subtracted.
"""

import re
import socket
import subprocess
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
from cond_breakpoints import arguments, compare  # noqa: E402  (the same measure, its table)


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def run_over_tcp(server: list[str], exe: Path, calls: int, setup: list[str], workdir: Path) -> int:
    """Loop time in ns with SETUP's gdb commands given at main, the server on a TCP port."""
    port = free_port()
    output = workdir / "server.out"
    with open(output, "w") as out:
        stub = subprocess.Popen([*server, f"127.0.0.1:{port}", str(exe), str(calls)],
                                stdout=out, stderr=subprocess.STDOUT)
    script = workdir / "session.gdb"
    lines = [f"target remote 127.0.0.1:{port}", "break main", "continue", "delete", *setup,
             "continue"]
    script.write_text("\n".join(lines) + "\n")
    try:
        for _ in range(100):  # (until it listens)
            gdb = subprocess.run(["gdb", "-batch", "-nx", "-iex", "set sysroot /", "-x",
                                  str(script), str(exe)], capture_output=True, text=True,
                                 timeout=3600)
            if "Connection refused" not in gdb.stdout + gdb.stderr:
                break
        stub.wait(timeout=60)
    finally:
        stub.kill()
    text = output.read_text()
    m = re.search(r"loop_ns=(\d+)", text)
    if not m:
        raise SystemExit(f"no timing from {' '.join(server)} {setup}:\n{text[-3000:]}\n"
                         f"{gdb.stdout[-2000:]}{gdb.stderr[-2000:]}")
    return int(m.group(1))


def main() -> None:
    tpagent, stopping, in_program, gdbserver = arguments(__doc__, 1_000_000)
    dprintf = 'dprintf traced_function,"i=%ld\\n", i'
    agent = "set dprintf-style agent"
    # (label, server, gdb commands at main, calls)
    cases = [("tpagent, in the program", [tpagent], [agent, dprintf], in_program),
             ("tpagent, at each stop", [tpagent],
              ["monitor set inproc-breakpoints off", agent, dprintf], stopping)]
    if gdbserver:
        cases.append(("gdbserver, agent", [gdbserver], [agent, dprintf], stopping))
    cases.append(("gdb, gdb style", [tpagent], ["set dprintf-style gdb", dprintf], stopping))
    compare(tpagent, cases, stopping, in_program,
            "agent-style dprintf, cost per line ({in_program} lines formatted in the program, "
            "{stopping} where each stops it; loop alone {loop:.1f} ns/call)", run_over_tcp)


if __name__ == "__main__":
    main()
