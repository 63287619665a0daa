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

And over libc's line table (libc6-dbg): N statement starts sampled (all addresses `ftrace
FILE:LINE` can get), `ftrace *ADDR` at each. The same over the line table of a Go program
(`go-lines`: Go's own gofmt, built static from Debian's golang-go, waiting on its input).

Printed per module: the functions (or addresses) sampled, how many gdb accepted, how many got a jump (fast)
and how many a trap, the reasons for traps (grouped), and how many of those addresses hold an
instruction of 5 bytes or more (all a 5-byte minimum, qTMinFTPILen=5, would accept).
"""

import argparse
import collections
import json
import random
import os
import re
import shutil
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
# Printed, not captured (a capture of this much console output comes back empty): gdb -batch
# prints the target's console output on stderr.
gdb.execute("monitor tracepoints")
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


def libc_line_starts() -> list[int]:
    """The statement starts of libc's line table (its debug file, libc6-dbg): every address
    `break FILE:LINE` or `ftrace FILE:LINE` can resolve to, at link-time addresses."""
    libc = LIBDIR / "libc.so.6"
    notes = subprocess.run(["readelf", "-n", str(libc)], capture_output=True, text=True).stdout
    m = re.search(r"Build ID: ([0-9a-f]+)", notes)
    debug = Path("/usr/lib/debug/.build-id") / m.group(1)[:2] / (m.group(1)[2:] + ".debug") if m else None
    if not debug or not debug.exists():
        return []
    return line_starts(debug)


def line_starts(debug: Path) -> list[int]:
    """The statement starts ("x" in objdump's decoded line table) of DEBUG's line table."""
    text = subprocess.run(["objdump", "--dwarf=decodedline", str(debug)], capture_output=True,
                          text=True).stdout
    starts = set()
    for line in text.splitlines():
        f = line.split()
        if len(f) >= 4 and f[2].startswith("0x") and f[-1] == "x":
            starts.add(int(f[2], 16))
    return sorted(starts)


def mapped_base(pid: int, name: str) -> int:
    for line in Path(f"/proc/{pid}/maps").read_text().splitlines():
        f = line.split()
        if len(f) >= 6 and f[5].endswith(name) and int(f[2], 16) == 0:
            return int(f[0].split("-")[0], 16)
    raise RuntimeError(f"{name} is not mapped in {pid}")


def measure(tpagent: Path, pid: int, program: Path, names: list[str], scratch: Path) -> dict:
    script = scratch / f"reach_{pid}.py"
    script.write_text(GDB_PY.replace("NAMES", json.dumps(names)))
    cmd = ["gdb", "-q", "-batch", "-nx", "-ex", "set sysroot /", "-ex", f"file {program}",
           "-ex", f"target remote | {tpagent} --attach - {pid}",
           "-x", str(script), "-ex", "detach"]
    r = subprocess.run(cmd, capture_output=True, text=True, timeout=1200)
    for line in r.stdout.splitlines():
        if line.startswith("REACH-JSON "):
            res = json.loads(line[len("REACH-JSON "):])
            # One line per tracepoint (tstart's own lines repeat some of monitor's).
            lines = {}
            for m in re.finditer(r"^Fast tracepoint (\d+) at .*$", r.stderr, re.M):
                lines[m.group(1)] = m.group(0)
            res["monitor"] = "\n".join(lines.values())
            return res
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
            why = re.sub(r"tracepoint \d+", "tracepoint N", why)
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


def go_lines(tpagent: Path, scratch: Path, rng: random.Random, count: int, procs: list) -> None:
    go = shutil.which("go")
    if go is None:
        print("go-lines: skipped (no go: Debian's golang-go)")
        return
    gofmt = scratch / "gofmt"
    env = dict(os.environ, CGO_ENABLED="0", GOCACHE=str(scratch / "go-cache"), GOFLAGS="")
    subprocess.run([go, "build", "-o", str(gofmt), "cmd/gofmt"], check=True, env=env)
    p = subprocess.Popen([str(gofmt)], stdin=subprocess.PIPE, stdout=subprocess.DEVNULL)
    procs.append(p)
    time.sleep(0.5)  # (its runtime started, reading its input)
    starts = line_starts(gofmt)  # a static program: its addresses are the file's
    sample = sorted(rng.sample(starts, min(count, len(starts))))
    res = measure(tpagent, p.pid, gofmt, [f"*0x{a:x}" for a in sample], scratch)
    report(f"Go line starts (gofmt, {len(starts)} in its line table)", len(sample), res)


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--tpagent", default=str(REPO / "build/default/bin/tpagent"))
    ap.add_argument("--sample", type=int, default=400)
    ap.add_argument("--seed", type=int, default=46)
    ap.add_argument("--module", action="append", choices=["zlib", "sqlite", "redis", "libc-lines", "go-lines"])
    ap.add_argument("--lines", type=int, default=2000, help="libc line starts sampled")
    args = ap.parse_args()
    modules = args.module or ["zlib", "sqlite", "redis", "libc-lines", "go-lines"]
    rng = random.Random(args.seed)
    with tempfile.TemporaryDirectory(prefix="reach.") as tmp:
        scratch = Path(tmp)
        procs = []
        try:
            targets = []
            if {"zlib", "sqlite", "libc-lines"} & set(modules):
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
            if "libc-lines" in modules:
                starts = libc_line_starts()
                if not starts:
                    print("libc-lines: skipped (no libc debug file: libc6-dbg)")
                else:
                    base = mapped_base(procs[0].pid, "libc.so.6")
                    sample = sorted(rng.sample(starts, min(args.lines, len(starts))))
                    res = measure(Path(args.tpagent), procs[0].pid, host,
                                  [f"*0x{base + a:x}" for a in sample], scratch)
                    report(f"libc line starts ({len(starts)} in its line table)", len(sample), res)
            if "go-lines" in modules:
                go_lines(Path(args.tpagent), scratch, rng, args.lines, procs)
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
