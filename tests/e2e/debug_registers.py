"""Do this machine's hardware debug registers fire? Many VMs accept debug-register settings
but never trap on them; gdb's own native `watch` then never stops either. The hardware
watchpoint and breakpoint tests ask this first and are skipped (ctest's skip code) where the
answer is no, with the reason."""

import functools
import subprocess
import tempfile
from pathlib import Path

# ctest treats this exit code as "skipped" (SKIP_RETURN_CODE of the e2e tests).
SKIP_EXIT_CODE = 77

PROBE = """int watched;
int main(void) { watched = 1; watched = 2; return 0; }
"""


@functools.cache
def why_they_do_not_fire() -> str | None:
    """None when a native gdb's hardware watchpoint stops on a write; else what gdb said."""
    with tempfile.TemporaryDirectory(prefix="tpagent-dr-probe-") as tmp:
        source, program = Path(tmp) / "probe.c", Path(tmp) / "probe"
        source.write_text(PROBE)
        subprocess.run(["cc", "-g", "-O0", "-o", str(program), str(source)], check=True, timeout=120)
        commands = ["break main", "run", "watch watched", "continue", "kill"]
        args = ["gdb", "-nx", "-batch", "-ex", "set confirm off"]
        for c in commands:
            args += ["-ex", c]
        result = subprocess.run([*args, str(program)], capture_output=True, text=True, timeout=120)
        out = result.stdout + result.stderr
        if "Hardware watchpoint 2: watched" in out and "New value = 1" in out:
            return None
        return "hardware debug registers do not fire here (gdb's native `watch` did not stop):\n" + out[-1500:]
