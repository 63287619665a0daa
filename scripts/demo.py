#!/usr/bin/env python3
"""Demo: gdb debugs examples/demo.c through tpagent over TCP, and we show the session.

Usage: scripts/demo.py BUILD_DIR
The server is BUILD_DIR/bin/tpagent, or whatever TPAGENT_E2E_SERVER names (e.g.
gdbserver, to compare). The demo compiles its own program; it needs cc and gdb.
"""

import os
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "tests" / "e2e"))

from harness import GDB_TIMEOUT, Gdb, Reaper, Server, LISTENING, compile_program  # noqa: E402

# The session: stop in add_sample, look around, skip ahead, step, finish, run to the end.
COMMANDS = [
    "break add_sample",
    "continue",
    "backtrace",
    "print *s",
    "continue 3",
    "print value",
    "print *s",
    "next",
    "next",
    "print s->sum",
    "info registers rip",
    "finish",
    "print s",
    "delete",
    "continue",
]


def style(text: str, code: str) -> str:
    return f"\x1b[{code}m{text}\x1b[0m" if sys.stdout.isatty() else text


def main() -> int:
    if len(sys.argv) != 2:
        print(__doc__.strip(), file=sys.stderr)
        return 2
    build = Path(sys.argv[1]).resolve()
    server_path = os.environ.get("TPAGENT_E2E_SERVER") or str(build / "bin" / "tpagent")

    out_dir = build / "examples"
    out_dir.mkdir(parents=True, exist_ok=True)
    program = compile_program(ROOT / "examples" / "demo.c", out_dir / "demo")

    reaper = Reaper()
    ok = False
    try:
        server = Server([server_path, ":0", str(program)], reaper)
        port = int(server.wait_for(LISTENING).group(1))
        print(style(f"$ {Path(server_path).name} :0 {program.name}", "1"))
        print(server.output)
        print()

        result = Gdb([f"target remote 127.0.0.1:{port}", *COMMANDS], program, reaper).wait(GDB_TIMEOUT)
        print(style(f"$ gdb -batch {program.name}", "1"))
        for line in result.transcript.splitlines():
            print(style(line, "1;36") if line.startswith("(gdb) ") else line)

        server.wait_exit()
        print()
        print(style("server log and program output:", "1"))
        print(server.output)
        ok = "exited normally" in result.output and "count=6 sum=98 min=4 max=31" in server.output
    except AssertionError as error:  # the harness's way of saying a wait failed
        print(error)
    finally:
        reaper.kill_all()
    print()
    print(style("demo finished" if ok else "demo FAILED: see above", "1;32" if ok else "1;31"))
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
