"""A program started through its dynamic loader (`STUB :PORT /lib64/ld-linux-x86-64.so.2 ./prog`,
as gdb's own testsuite does in gdb.server/solib-list.exp): the loader is the process's
executable and has no DT_DEBUG, so the stub cannot find the library list from it. It answers
qXfer:libraries-svr4 with an error, as gdbserver does, and gdb finds the list itself through
the loader's `_r_debug`: the program's libraries are known, their symbols found.
"""

import re
import subprocess
from pathlib import Path

from harness import assert_in_order
from scenario import Scenario


def interpreter(program: Path) -> Path:
    """The dynamic loader PROGRAM asks for (PT_INTERP)."""
    out = subprocess.run(["readelf", "-l", str(program)], capture_output=True, text=True, check=True).stdout
    return Path(re.search(r"Requesting program interpreter: ([^\]]+)\]", out).group(1))


def test_libraries_of_a_program_started_through_its_loader(e2e):
    program = e2e.programs.with_library()
    server = e2e.serve(interpreter(program), str(program), "4")
    s = Scenario(e2e, "ftrace_shlib", program=program, server=server)
    r = s.gdb("set breakpoint pending on", "break lib_traced", "continue", "info sharedlibrary",
              "print lib_last", "delete", "continue")
    assert_in_order(r.of("continue"), r"Breakpoint \d+, lib_traced \(n=0\)")
    assert_in_order(r.of("info sharedlibrary"), r"\s\S*/libftrace_lib\.so$")
    assert r.value("print lib_last") == "-1"
    assert_in_order(r.of("continue", 1), r"exited with code")
