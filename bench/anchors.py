#!/usr/bin/env python3
"""A fast tracepoint's hit beside what a user would otherwise pick, in one run, on the same
function of the same program (programs/ftrace_loop.c's traced(), its untraced loop timed by the
program in the same process, as in bench/ftrace.py):

- tpagent, `ftrace traced` collecting `$regs` and the 64 bytes of `buf`, through gdb;
- gdbserver + libinproctrace.so, the same gdb script;
- a kernel uprobe that only counts: `bpftrace -e 'uprobe:PROG:traced { @n = count(); }'`
  (Debian's bpftrace), attached between the untraced and the traced loop (the program's
  FTRACE_LOOP_HANDSHAKE); skipped with the reason where the kernel or bpftrace refuses;
- an LTTng-UST tracepoint in traced() carrying the same payload (18 longs + 64 bytes),
  recorded to a session on disk (bench/lttng_anchor.py); skipped where LTTng is missing.

Usage: bench/anchors.py [--tpagent PATH] [--hits N] [--uprobe-hits N] [--repeat R]

Prints each run, then a table: ns per hit (median of R runs) and how many times tpagent's hit
is cheaper. A uprobe hit costs tens of microseconds in a VM, so its runs make fewer calls.
"""

import argparse
import os
import re
import shutil
import signal
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
import ftrace  # noqa: E402
import lttng_anchor  # noqa: E402

PAYLOAD = ftrace.CASES["regs+mem"]
BPF_TIMEOUT = 60


def measure_uprobe(exe: Path, hits: int, base_ms: int) -> dict:
    """One run of exe with a counting uprobe on traced() attached around its traced loop."""
    if not shutil.which("bpftrace"):
        raise RuntimeError("no bpftrace binary (Debian: bpftrace)")
    env = {**os.environ, "FTRACE_LOOP_HANDSHAKE": "1"}
    prog = lttng_anchor._Program([str(exe), "60000", "1", str(base_ms), str(hits)], env)
    bpf = None
    try:
        prog.expect("ready", 60 + base_ms / 1000, '"ready"')
        bpf = subprocess.Popen(["bpftrace", "-e", f"uprobe:{exe}:traced {{ @n = count(); }}"],
                               stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                               text=True, start_new_session=True)
        # Attached once it says so; its probes are in by then.
        deadline = time.monotonic() + BPF_TIMEOUT
        seen = []
        while True:
            line = bpf.stdout.readline()
            if not line:
                bpf.wait(timeout=10)
                raise RuntimeError("bpftrace did not attach: " + " | ".join(seen[-3:]))
            seen.append(line.strip())
            if line.startswith("Attaching"):
                break
            if time.monotonic() > deadline:
                raise RuntimeError("bpftrace did not attach in time")
        time.sleep(0.5)
        prog.go_on()
        prog.expect("traced", 600, '"traced"')
        os.killpg(bpf.pid, signal.SIGINT)
        out, _ = bpf.communicate(timeout=BPF_TIMEOUT)
        bpf = None
        prog.go_on()
        m = prog.expect(lttng_anchor.RESULT.pattern, 60, "its result")
        prog.finish(30)
    finally:
        if bpf and bpf.poll() is None:
            os.killpg(bpf.pid, signal.SIGKILL)
            bpf.wait()
        prog.kill()
    base_calls, base_ns, traced_calls, traced_ns = map(int, m.groups()[:4])
    counted = re.search(r"@n: (\d+)", out)
    if not counted:
        raise RuntimeError("bpftrace printed no count: " + out.strip()[-200:])
    return {"base_calls": base_calls, "base_ns": base_ns, "hits": traced_calls, "traced_ns": traced_ns,
            "counted": int(counted.group(1))}


def cost(r: dict) -> float:
    return r["traced_ns"] / r["hits"] - r["base_ns"] / r["base_calls"]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--tpagent", type=Path, default=ftrace.REPO / "build/default/bin/tpagent")
    parser.add_argument("--hits", type=int, default=1_000_000, help="tpagent's, gdbserver's and LTTng's calls")
    parser.add_argument("--uprobe-hits", type=int, default=20_000, help="the uprobe runs' calls")
    parser.add_argument("--base-ms", type=int, default=100)
    parser.add_argument("--repeat", type=int, default=3)
    args = parser.parse_args()
    tpagent = args.tpagent.resolve()
    tplib = tpagent.parent / "libtpagent-inproc.so"
    costs: dict[str, list[float]] = {}
    skipped: dict[str, str] = {}

    def record(name: str, r: dict, note: str = "") -> None:
        costs.setdefault(name, []).append(cost(r))
        print(f"{name}: untraced {r['base_ns'] / r['base_calls']:.2f} ns/call, {r['hits']} hits, "
              f"{cost(r):,.1f} ns/hit{note}", flush=True)

    run_args = argparse.Namespace(ms=ftrace.LONGEST_MS, base_ms=args.base_ms, hits=args.hits, buffer_mib=16)
    with tempfile.TemporaryDirectory() as tmp:
        workdir = Path(tmp)
        exes = ftrace.build(workdir)
        servers = [
            ftrace.Server("tpagent", [str(tpagent), "--wrapper", "env", f"LD_PRELOAD={tplib}", "--"], exes["nopie"]),
            ftrace.Server("gdbserver + libinproctrace",
                          [shutil.which("gdbserver") or "gdbserver", "--wrapper", "env", f"LD_PRELOAD={ftrace.IPA}", "--"],
                          exes["nopie"]),
        ]
        lttng_missing = lttng_anchor.lttng_available()
        lttng_exe = None
        if not lttng_missing:
            try:
                lttng_exe = lttng_anchor.build_lttng(workdir)
            except (RuntimeError, subprocess.CalledProcessError) as e:
                lttng_missing = f"cannot build the LTTng-UST program: {e}"
        if lttng_missing:
            skipped["LTTng-UST event, recorded"] = lttng_missing
        # Alternated, so that a drift of the machine's speed touches every column alike.
        for i in range(args.repeat):
            for s in servers:
                try:
                    r = ftrace.run(s, PAYLOAD, 1, run_args, workdir)
                    record(s.name, r, "" if r["frames"] == r["hits"] else f" (frames {r['frames']})")
                except ftrace.RunFailed as e:
                    skipped[s.name] = str(e)
            name = "kernel uprobe, counting (bpftrace)"
            if name not in skipped:
                try:
                    r = measure_uprobe(exes["nopie"], args.uprobe_hits, args.base_ms)
                    record(name, r, f", counted {r['counted']}")
                except (RuntimeError, OSError, subprocess.SubprocessError) as e:
                    skipped[name] = str(e)
            if lttng_exe:
                name = "LTTng-UST event, recorded"
                try:
                    r = lttng_anchor.measure_lttng(lttng_exe, workdir, 1, ftrace.LONGEST_MS, args.base_ms,
                                                   args.hits, 0)
                    record(name, r, f", recorded {r['recorded']}, discarded {r['discarded']}")
                except RuntimeError as e:
                    skipped[name] = str(e)

    ours = statistics.median(costs["tpagent"]) if costs.get("tpagent") else None
    targets = {"kernel uprobe, counting (bpftrace)": 1000, "LTTng-UST event, recorded": 20,
               "gdbserver + libinproctrace": 200}
    print()
    print(f"`{', '.join(PAYLOAD.actions)}` ($regs + 64 B) per hit, median of {args.repeat} runs, one thread")
    print()
    print("| | ns per hit | tpagent is cheaper by | wanted |")
    print("|---|---|---|---|")
    for name in ["tpagent", *targets]:
        if name in costs and costs[name]:
            v = statistics.median(costs[name])
            ratio = f"{v / ours:,.0f}x" if ours and name != "tpagent" else ""
            wanted = f"≥ {targets[name]}x" if name in targets else ""
            print(f"| {name} | {v:,.1f} | {ratio} | {wanted} |")
        else:
            print(f"| {name} | skipped: {skipped.get(name, 'no run')} | | |")


if __name__ == "__main__":
    main()
