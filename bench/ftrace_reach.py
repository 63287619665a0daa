#!/usr/bin/env python3
"""Where `ftrace FUNC` gets a fast tracepoint in real -O2 code, through the real gdb.

Usage: bench/ftrace_reach.py [--tpagent PATH] [--sample N] [--seed S] [--module NAME ...]

Modules: zlib and SQLite (Debian's libz.so.1 and libsqlite3.so.0, mapped by
programs/reach_host.c built here) and redis-server (Debian's, listening on a Unix socket only,
no saving). For each module, N functions (all when fewer) sampled from its exported functions
(`nm -D`: the dynamic symbol table, as a stripped program has), then in one gdb session with
tpagent attached to the running program: `ftrace FUNC` for each (gdb picks the address, as it
does for a user), the length of the instruction there (gdb's disassembler, before anything is
patched), `tstart`, `monitor tracepoints` (a jump, or a trap and why), `tstop`.

Printed per module: the functions sampled, how many gdb accepted, how many got a jump (fast)
and how many a trap, the reasons for traps (grouped), and how many of those addresses hold an
instruction of 5 bytes or more (all a 5-byte minimum, qTMinFTPILen=5, would accept).
"""

import argparse
import collections
import json
import random
import re
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
REPO = HERE.parent
LIBDIR = Path("/lib/x86_64-linux-gnu")

GDB_PY = r'''
import gdb, json, re
names = NAMES
out = {"accepted": 0, "refused": [], "lengths": {}}
gdb.execute("set pagination off")
gdb.execute("set confirm off")
for name in names:
    try:
        gdb.execute("ftrace " + name, to_string=True)
        out["accepted"] += 1
    except gdb.error as e:
        out["refused"].append([name, str(e)])
listing = gdb.execute("info tracepoints", to_string=True)
arch = gdb.selected_inferior().architecture()
for m in re.finditer(r"^(\d+)\s+fast tracepoint\s+\S+\s+\S+\s+(0x[0-9a-f]+)", listing, re.M):
    a = int(m.group(2), 16)
    out["lengths"][m.group(1)] = [a, arch.disassemble(a)[0]["length"]]
gdb.execute("tstart")
out["monitor"] = gdb.execute("monitor tracepoints", to_string=True)
gdb.execute("tstop")
print("REACH-JSON " + json.dumps(out))
'''


def functions(module: Path) -> list[str]:
    text = subprocess.run(["nm", "-D", "--defined-only", str(module)], capture_output=True,
                          text=True, check=True).stdout
    names = set()
    for line in text.splitlines():
        parts = line.split()
        if len(parts) == 3 and parts[1] in ("T", "t"):
            names.add(parts[2].split("@")[0])
    return sorted(names)


def measure(tpagent: Path, pid: int, program: Path, names: list[str], scratch: Path) -> dict:
    script = scratch / f"reach_{pid}.py"
    script.write_text(GDB_PY.replace("NAMES", json.dumps(names)))
    cmd = ["gdb", "-q", "-batch", "-nx", "-ex", "set sysroot /", "-ex", f"file {program}",
           "-ex", f"target remote | {tpagent} --attach - {pid}",
           "-x", str(script), "-ex", "detach"]
    r = subprocess.run(cmd, capture_output=True, text=True, timeout=1200)
    for line in r.stdout.splitlines():
        if line.startswith("REACH-JSON "):
            return json.loads(line[len("REACH-JSON "):])
    raise RuntimeError("gdb said:\n" + r.stdout[-3000:] + r.stderr[-3000:])


def report(label: str, sampled: int, res: dict) -> None:
    fast, traps = 0, collections.Counter()
    for line in res["monitor"].splitlines():
        if "jumps to its pad" in line:
            fast += 1
        elif "through a trap" in line:
            why = line.split("): ", 1)[-1]
            why = re.sub(r"0x[0-9a-f]+", "ADDR", why)
            why = re.sub(r"\d+ bytes", "N bytes", why)
            why = re.sub(r" in /\S+", "", why)
            traps[why] += 1
    long_enough = sum(1 for _, n in res["lengths"].values() if n >= 5)
    accepted = res["accepted"]
    print(f"{label}: {sampled} functions; gdb accepted {accepted}; "
          f"fast {fast} ({100.0 * fast / max(accepted, 1):.1f}%), trap {sum(traps.values())}; "
          f"instruction >= 5 bytes at {long_enough} ({100.0 * long_enough / max(accepted, 1):.1f}%)")
    for why, n in traps.most_common():
        print(f"    trap x{n}: {why}")
    for name, err in res["refused"][:5]:
        print(f"    refused by gdb: {name}: {err}")


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--tpagent", default=str(REPO / "build/default/bin/tpagent"))
    ap.add_argument("--sample", type=int, default=400)
    ap.add_argument("--seed", type=int, default=46)
    ap.add_argument("--module", action="append", choices=["zlib", "sqlite", "redis"])
    args = ap.parse_args()
    modules = args.module or ["zlib", "sqlite", "redis"]
    rng = random.Random(args.seed)
    with tempfile.TemporaryDirectory(prefix="reach.") as tmp:
        scratch = Path(tmp)
        procs = []
        try:
            targets = []
            if {"zlib", "sqlite"} & set(modules):
                host = scratch / "reach_host"
                subprocess.run(["gcc", "-O2", "-o", str(host), str(HERE / "programs/reach_host.c"),
                                str(LIBDIR / "libz.so.1"), str(LIBDIR / "libsqlite3.so.0")],
                               check=True)
                p = subprocess.Popen([str(host)], stdout=subprocess.PIPE)
                p.stdout.readline()
                procs.append(p)
                for m, lib in (("zlib", "libz.so.1"), ("sqlite", "libsqlite3.so.0")):
                    if m in modules:
                        targets.append((m, p.pid, host, LIBDIR / lib))
            if "redis" in modules:
                redis = Path("/usr/bin/redis-server")
                if not redis.exists():
                    print("redis: skipped (no /usr/bin/redis-server)")
                else:
                    p = subprocess.Popen([str(redis), "--port", "0", "--save", "", "--unixsocket",
                                          str(scratch / "redis.sock")],
                                         stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
                    time.sleep(1.0)
                    procs.append(p)
                    targets.append(("redis", p.pid, redis, redis))
            for label, pid, program, module in targets:
                names = functions(module)
                sample = sorted(rng.sample(names, min(args.sample, len(names))))
                report(f"{label} ({module.name})", len(sample),
                       measure(Path(args.tpagent), pid, program, sample, scratch))
        finally:
            for p in procs:
                p.send_signal(signal.SIGKILL)
                p.wait()
    return 0


if __name__ == "__main__":
    sys.exit(main())
