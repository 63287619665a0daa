#!/usr/bin/env python3
"""Cost per hit of a tracepoint on the emulated arm64 board, one run, medians of REPEAT:
tpagent's fast tracepoint (its pad writing the frame itself, and calling the in-process agent's
collector: `monitor set inline-collection off`), tpagent's trap tracepoint and Debian's arm64
gdbserver's trap
tracepoint (its fast tracepoints do not work there: its in-process agent crashes programs),
each collecting $regs and the traced function's argument, in bench/programs/hits.c
cross-compiled for arm64. The program times its own loop; the untraced loop time (the same
number of calls, the agent preloaded) is subtracted. These are emulated figures (qemu TCG on
this machine): only their ratios mean something.

Usage: bench/arm64_board.py ARM64_TPAGENT [--repeat N] [--fast-hits N] [--trap-hits N]
The board is tests/arm64's (scripts/arm64-board.sh; its cache in build/arm64-board, fetched
on first use). libtpagent-inproc.so is taken from next to ARM64_TPAGENT.
"""

from __future__ import annotations

import argparse
import os
import re
import shutil
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

HERE = Path(__file__).resolve().parent
REPO = HERE.parent
sys.path[:0] = [str(REPO / "tests" / "arm64"), str(REPO / "tests" / "e2e")]

from board import CROSS_COMPILER, GDB, GDBSERVER, Board, BoardServer  # noqa: E402

ACTIONS = ("collect $regs", "collect i")
AGENT = "/payload/libtpagent-inproc.so"


def gdb_run(board: Board, program: Path, port: int, kind: str | None, workdir: Path, before: tuple[str, ...]) -> str:
    """gdb-multiarch to main, BEFORE (monitor commands), a tracepoint of KIND (ftrace, trace or
    none) with ACTIONS, tstart, then the program runs to its end."""
    lines = [f"target remote 127.0.0.1:{port}", "break main", "continue", "delete", *before]
    if kind:
        lines += [f"{kind} traced_function", "actions", *ACTIONS, "end", "tstart"]
    if kind == "ftrace":  # tpagent's: which code collects it
        lines += ["monitor tracepoints"]
    lines += ["continue"]
    script = workdir / "session.gdb"
    script.write_text("\n".join(lines) + "\n")
    init = ["set pagination off", "set confirm off", f"set sysroot {board.sysroot}", "set trust-readonly-sections on"]
    argv = [GDB, "-batch", "-nx", *(a for o in init for a in ("-iex", o)), "-x", str(script), str(program)]
    done = subprocess.run(argv, capture_output=True, text=True, timeout=900)
    if "exited normally" not in done.stdout + done.stderr:
        raise SystemExit(f"gdb did not run {program.name} to its end:\n{done.stdout}{done.stderr}")
    return done.stdout + done.stderr


def loop_ns(
    board: Board, program: Path, stub: str, kind: str | None, hits: int, workdir: Path, before: tuple[str, ...] = ()
) -> int:
    """The program's own loop time for HITS calls under STUB (tpagent with the agent
    preloaded, or gdbserver) with a tracepoint of KIND or none."""
    host_port, board_port = board.next_stub()
    if stub == "tpagent":
        argv = ["/payload/tpagent", "--wrapper", "env", f"LD_PRELOAD={AGENT}", "--"]
    else:
        argv = [GDBSERVER]
    argv += [f"0.0.0.0:{board_port}", f"/payload/{program.name}", str(hits)]
    server = BoardServer(board, board.spawn_name(), argv, host_port)
    try:
        said = gdb_run(board, program, host_port, kind, workdir, before)
        if kind == "ftrace":  # which code collected: the pad's own, or the agent's collector
            wanted = "collector collects it" if before else "Its pad writes its frames itself."
            if wanted not in said:
                raise SystemExit(f"expected {wanted!r} from monitor tracepoints:\n{said}")
        return int(server.wait_for(r"loop_ns=(\d+)", timeout=120).group(1))
    finally:
        server.kill()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("tpagent", type=Path)
    parser.add_argument("--repeat", type=int, default=5)
    parser.add_argument("--fast-hits", type=int, default=100000)
    parser.add_argument("--trap-hits", type=int, default=200)
    opts = parser.parse_args()
    tpagent = opts.tpagent.resolve()
    agent = tpagent.parent / "libtpagent-inproc.so"
    if not tpagent.is_file() or not agent.is_file():
        raise SystemExit(f"need {tpagent} and {agent} (cmake --build --preset arm64)")
    cache = Path(os.environ.get("TPAGENT_ARM64_BOARD_CACHE") or REPO / "build" / "arm64-board").resolve()
    with tempfile.TemporaryDirectory(prefix="tpagent-arm64-bench-") as tmp:
        workdir = Path(tmp)
        payload, state = workdir / "payload", workdir / "board"
        payload.mkdir()
        state.mkdir()
        program = payload / "hits"
        subprocess.run([CROSS_COMPILER, "-g", "-O1", "-o", str(program), str(HERE / "programs" / "hits.c")], check=True)
        shutil.copy2(tpagent, payload / "tpagent")
        shutil.copy2(agent, payload / agent.name)
        board = Board(cache, payload, state)
        board.fetch()
        board.start()
        try:
            generic = ("monitor set inline-collection off",)
            runs = {
                "fast (tpagent)": ("tpagent", "ftrace", opts.fast_hits, ()),
                "fast, collector": ("tpagent", "ftrace", opts.fast_hits, generic),
                "trap (tpagent)": ("tpagent", "trace", opts.trap_hits, ()),
                "trap (gdbserver)": ("gdbserver", "trace", opts.trap_hits, ()),
            }
            baseline = {
                hits: statistics.median(
                    loop_ns(board, program, "tpagent", None, hits, workdir) for _ in range(opts.repeat)
                )
                for hits in {opts.fast_hits, opts.trap_hits}
            }
            per_hit: dict[str, float] = {}
            for label, (stub, kind, hits, before) in runs.items():
                times = [loop_ns(board, program, stub, kind, hits, workdir, before) for _ in range(opts.repeat)]
                per_hit[label] = (statistics.median(times) - baseline[hits]) / hits
        finally:
            board.stop()
    print(f"arm64 board (qemu TCG, emulated): cost per hit, {' + '.join(ACTIONS)}, median of {opts.repeat}")
    print(f"{'tracepoint':<20}{'per hit':>14}{'hits':>10}   ratio to fast (tpagent)")
    fast = per_hit["fast (tpagent)"]
    for label, (_, _, hits, _) in runs.items():
        value = per_hit[label]
        shown = f"{value / 1000:.1f} us" if value >= 10000 else f"{value:.0f} ns"
        ratio = value / fast
        times = f"{ratio:.2f}x" if ratio < 10 else f"{ratio:,.0f}x"
        print(f"{label:<20}{shown:>14}{hits:>10}   {times}")


if __name__ == "__main__":
    main()
