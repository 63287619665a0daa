#!/usr/bin/env python3
"""Throughput of saving a full trace buffer: `tsave -r` (tpagent writes the file on the target)
against plain `tsave` (gdb pulls the buffer with qTBuffer), and of `tpdump --json` on the file.

Usage: bench/tsave.py BUILD_DIR [BUFFER_MIB]
"""

import re
import subprocess
import sys
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent


def main() -> None:
    if len(sys.argv) < 2:
        raise SystemExit(__doc__)
    build = Path(sys.argv[1]).resolve()
    mib = int(sys.argv[2]) if len(sys.argv) > 2 else 64
    tpagent, tpdump = build / "bin" / "tpagent", build / "bin" / "tpdump"
    with tempfile.TemporaryDirectory() as tmp:
        work = Path(tmp)
        exe = work / "bulk"
        subprocess.run(["cc", "-g", "-O1", "-o", str(exe), str(HERE / "programs" / "bulk.c")], check=True)
        hits = mib * 1024 * 1024 // 60000 + 50  # enough to fill the buffer
        target_file, host_file = work / "target.tf", work / "host.tf"
        script = work / "session.gdb"
        script.write_text(
            "\n".join(
                [
                    "set sysroot /",
                    f"set trace-buffer-size {mib * 1024 * 1024}",
                    f"target remote | {tpagent} - {exe} {hits}",
                    "break main",
                    "continue",
                    "trace fill",
                    "actions",
                    "collect block",
                    "end",
                    "break bulk.c:15",
                    "tstart",
                    "continue",
                    "tstatus",
                    "python import time; t0 = time.monotonic()",
                    f"tsave -r {target_file}",
                    "python print('target_s=%f' % (time.monotonic() - t0)); t0 = time.monotonic()",
                    f"tsave {host_file}",
                    "python print('host_s=%f' % (time.monotonic() - t0))",
                ]
            )
            + "\n"
        )
        out = subprocess.run(["gdb", "-batch", "-nx", "-x", str(script), str(exe)], capture_output=True, text=True, timeout=1200)
        text = out.stdout + out.stderr
        target_s = float(re.search(r"target_s=([\d.]+)", text).group(1))
        host_s = float(re.search(r"host_s=([\d.]+)", text).group(1))
        size = target_file.stat().st_size / 1e6
        frames = re.search(r"Collected (\d+) trace frames", text).group(1)
        t0 = time.monotonic()
        with open(work / "out.json", "w") as sink:
            subprocess.run([str(tpdump), "--json", "--registers", "none", str(target_file)], stdout=sink, check=True)
        dump_s = time.monotonic() - t0
        print(f"trace file: {size:.1f} MB, {frames} frames ({mib} MiB buffer)")
        print(f"tsave -r (tpagent writes on the target): {target_s:.3f} s = {size / target_s:.0f} MB/s")
        print(f"tsave (gdb pulls with qTBuffer):         {host_s:.3f} s = {size / host_s:.0f} MB/s")
        print(f"tpdump --json:                            {dump_s:.3f} s = {size / dump_s:.0f} MB/s")


if __name__ == "__main__":
    main()
