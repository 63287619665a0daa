#!/usr/bin/env python3
"""Demo: a tracing session. tpagent starts examples/demo.c with the in-process agent, gdb sets
a trap and a fast tracepoint, runs the trace, walks the frames and saves the trace on the
target; tpdump then prints the file and writes its HTML report.

Usage: scripts/demo.py BUILD_DIR
Needs BUILD_DIR/bin/{tpagent,libtpagent-inproc.so,tpdump}, cc and gdb. Writes
BUILD_DIR/examples/demo.tf and demo.html.
"""

import re
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "tests" / "e2e"))

from harness import GDB_TIMEOUT, LISTENING, Gdb, Reaper, Server, compile_program, marked_line  # noqa: E402

SOURCE = ROOT / "examples" / "demo.c"


def definitions() -> list[str]:
    """The tracepoints, as a user types them. Tracepoint 2 stops the thread for an instant
    (a trap); tracepoint 3 is collected inside the program by a jump to the in-process agent,
    only when its condition holds. $trace_thread: the collecting thread's id."""
    return [
        "tvariable $trace_thread",
        "trace add_sample",
        "actions",
        "  collect $regs, value, *st, readings_seen",
        "  collect $trace_thread, $trace_timestamp",
        "end",
        f"ftrace demo.c:{marked_line(SOURCE, 'reading')} if value > 40",
        "actions",
        "  collect $locals, s->stats",
        "  collect $trace_thread, $trace_timestamp",
        "end",
    ]


def style(text: str, code: str) -> str:
    return f"\x1b[{code}m{text}\x1b[0m" if sys.stdout.isatty() else text


def heading(text: str) -> None:
    print()
    print(style(f"== {text}", "1;33"))


def show_gdb(result, commands: list[str], seen: dict[str, int], sources: dict[str, list[str]]) -> None:
    """The commands with what gdb printed; a sourced file shows as the lines typed. SEEN:
    how many times each command was shown before (a command may run more than once)."""
    for command in commands:
        typed = sources.get(command, [command])
        for i, line in enumerate(typed):
            nested = i > 0 and line.startswith(("  ", "end"))
            print(style(">" + line.lstrip() if nested else "(gdb) " + line, "1;36"))
        nth = seen.get(command, 0)
        seen[command] = nth + 1
        text = result.of(command, nth).rstrip()
        if text:
            print(text)


def run(command: list[str], output: Path | None = None) -> str:
    print(style("$ " + " ".join(c if c != str(output) else output.name for c in command)
                + (f" > {output.name}" if output else ""), "1"))
    proc = subprocess.run(command, capture_output=True, text=True, timeout=120)
    if proc.returncode != 0:
        raise AssertionError(f"{command[0]} failed ({proc.returncode}):\n{proc.stdout}{proc.stderr}")
    if output:
        output.write_text(proc.stdout)
        return proc.stdout
    print(proc.stdout.rstrip())
    return proc.stdout


def main() -> int:
    if len(sys.argv) != 2:
        print(__doc__.strip(), file=sys.stderr)
        return 2
    build = Path(sys.argv[1]).resolve()
    tpagent, tpdump = build / "bin" / "tpagent", build / "bin" / "tpdump"
    out_dir = build / "examples"
    out_dir.mkdir(parents=True, exist_ok=True)
    program = compile_program(SOURCE, out_dir / "demo")
    trace_file, report = out_dir / "demo.tf", out_dir / "demo.html"
    for stale in (trace_file, report):
        stale.unlink(missing_ok=True)
    definition_file = out_dir / "demo-tracepoints.gdb"
    definition_file.write_text("".join(line + "\n" for line in definitions()))
    define = f"source {definition_file}"

    sections = [
        ("Stop in main: the in-process agent came in with the program", ["break main", "continue", "delete"]),
        ("A trap tracepoint and a fast tracepoint with a condition", [define, "info tracepoints"]),
        ("Trace: tstart, run until the sensors are done, tstop",
         ["break all_done", "tstart", "continue", "tstop", "tstatus", "info tracepoints"]),
        ("Walk the frames: the first one, then the fast tracepoint's",
         ["tfind start", "tdump", "print $trace_thread", "tfind tracepoint 3", "tdump",
          "print s->stats", "print $trace_thread", "tfind tracepoint 3", "print value"]),
        ("Save the trace on the target (tsave -r), let the program finish",
         ["tfind none", f"tsave -r {trace_file}", "delete", "continue"]),
    ]
    commands = [f"target remote 127.0.0.1:{{port}}"] + [c for _, group in sections for c in group]

    reaper = Reaper()
    ok = False
    try:
        heading("Start tpagent with the in-process agent (fast tracepoints)")
        server = Server([str(tpagent), "--inproc", ":0", str(program)], reaper)
        port = int(server.wait_for(LISTENING).group(1))
        print(style(f"$ tpagent --inproc :0 {program.name}", "1"))
        print(server.output.rstrip())

        commands[0] = commands[0].format(port=port)
        result = Gdb(commands, program, reaper).wait(GDB_TIMEOUT)
        heading(f"gdb {program.name}")
        seen: dict[str, int] = {}
        show_gdb(result, commands[:1], seen, {})
        for title, group in sections:
            heading(title)
            show_gdb(result, group, seen, {define: definitions()})
        server.wait_exit()
        heading("tpagent's log and the program's output")
        print(server.output.rstrip())

        heading("tpdump: the trace file, its first frames")
        run([str(tpdump), "--frames", "0-2", "--registers", "rip,rdi,rsi", str(trace_file)])
        heading("tpdump --html: a timeline and plots of the collected values")
        run([str(tpdump), "--html", str(trace_file)], report)
        print(f"open {report} in a browser")

        stopped = re.search(r"^Collected (\d+) trace frames\.$", result.of("tstatus"), re.M)
        ok = (
            "exited normally" in result.output
            and "readings=80" in server.output
            and stopped is not None and int(stopped.group(1)) > 80
            and report.stat().st_size > 0
        )
    except AssertionError as error:  # the harness's way of saying a wait failed
        print(error)
    finally:
        reaper.kill_all()
    print()
    print(style("demo finished" if ok else "demo FAILED: see above", "1;32" if ok else "1;31"))
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
