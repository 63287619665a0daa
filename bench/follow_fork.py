#!/usr/bin/env python3
"""What a fast tracepoint's hit costs in a child the trace follows (tpagent
--trace-follow-fork) against the same hit in the parent, in one run: the parent's pad collects
in line where it can, the child's goes through the in-process agent's collector, which reads
memory by process_vm_readv (no tracer recovers a fault of its direct copy in a child).

Usage: bench/follow_fork.py [--tpagent PATH] [--tpagent-lib PATH] [--hits N] [--repeat R]

programs/fork_hits.c makes N calls of traced() untraced, then N traced in the parent, then N in a
child it forks; cost per hit = a traced loop's wall time / N - the untraced loop's / N. Every run
checks the frames created: 2N. Each figure is the median of R runs.
"""

import argparse
import os
import re
import signal
import statistics
import subprocess
import tempfile
from pathlib import Path

HERE = Path(__file__).resolve().parent
REPO = HERE.parent
RUN_TIMEOUT = 120
CASES = {
    "none": ("no collection", []),
    "regs": ("`collect $regs`", ["collect $regs"]),
    "regs+mem": ("`collect $regs, counter` (+ 8 B of memory)", ["collect $regs, counter"]),
}


def run(tpagent: Path, lib: Path, exe: Path, actions: list[str], hits: int, workdir: Path) -> dict:
    server = [str(tpagent), "--trace-follow-fork", "--wrapper", "env", f"LD_PRELOAD={lib}", "--"]
    lines = [
        "set sysroot /", "set pagination off", "set confirm off",
        f"target remote | {' '.join(server)} - {exe} {hits}",
        "break ready", "break done", "continue",
        "set circular-trace-buffer on", "set trace-buffer-size 67108864",
        "ftrace traced",
        *(["actions", *actions, "end"] if actions else []),
        "tstart", "continue",
        'printf "calls=%ld base_ns=%ld parent_ns=%ld child_ns=%ld\\n", calls, base_ns, parent_ns, child_ns',
        "tstatus", "tstop", "kill",
    ]
    script = workdir / "session.gdb"
    script.write_text("\n".join(lines) + "\n")
    proc = subprocess.Popen(["gdb", "-batch", "-nx", "-x", str(script), str(exe)], stdin=subprocess.DEVNULL,
                            stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, start_new_session=True)
    try:
        text, _ = proc.communicate(timeout=RUN_TIMEOUT)
    except subprocess.TimeoutExpired:
        os.killpg(proc.pid, signal.SIGKILL)
        proc.communicate()
        raise RuntimeError(f"timed out after {RUN_TIMEOUT} s")
    m = re.search(r"calls=(\d+) base_ns=(\d+) parent_ns=(\d+) child_ns=(-?\d+)", text)
    if not m:
        raise RuntimeError(text[-600:])
    calls, base, parent, child = map(int, m.groups())
    created = re.search(r"(?:of (\d+) created total|Collected (\d+) trace frames)", text)
    frames = int(created.group(1) or created.group(2)) if created else -1
    if frames != 2 * calls:
        raise RuntimeError(f"{frames} frames created for {2 * calls} hits")
    return {"parent": (parent - base) / calls, "child": (child - base) / calls}


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--tpagent", type=Path, default=REPO / "build/default/bin/tpagent")
    p.add_argument("--tpagent-lib", type=Path)
    p.add_argument("--hits", type=int, default=1_000_000)
    p.add_argument("--repeat", type=int, default=5)
    args = p.parse_args()
    lib = args.tpagent_lib or args.tpagent.parent / "libtpagent-inproc.so"
    with tempfile.TemporaryDirectory() as tmp:
        work = Path(tmp)
        exe = work / "fork_hits"
        subprocess.run(["cc", "-g", "-O1", "-fcf-protection=none", "-fno-pie", "-no-pie", "-o", str(exe),
                        str(HERE / "programs" / "fork_hits.c")], check=True)
        print(f"fork_hits, {args.hits} calls a loop, median of {args.repeat} runs; ns per hit over the untraced call")
        print("| actions | in the parent | in a followed child | child / parent |")
        print("|---|---|---|---|")
        for label, actions in CASES.values():
            runs = [run(args.tpagent, lib, exe, actions, args.hits, work) for _ in range(args.repeat)]
            parent = statistics.median(r["parent"] for r in runs)
            child = statistics.median(r["child"] for r in runs)
            print(f"| {label} | {parent:.0f} | {child:.0f} | {child / parent:.1f}x |" if parent > 0 else
                  f"| {label} | {parent:.0f} | {child:.0f} | - |", flush=True)


if __name__ == "__main__":
    main()
