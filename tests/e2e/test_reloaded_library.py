"""A breakpoint in a library loaded where another was unloaded (gdb.base/unload.exp, found
running gdb's suites against both stubs). Runs against both stubs.

gdb sends no z0 for the breakpoints of a library it sees unloaded: the stub still holds the
breakpoint, with the bytes the old code had under it. When the new library's code is mapped
at that address and gdb inserts a breakpoint there, the stub must put it into the new code:
a stub that took it for one already in place never stopped there (the program ran to its
end), and one that wrote the old bytes back at the removal would have changed the new code.

reloads.c: loads libreloaded_first.so and calls first_entry(1), unloads it, then loads
libreloaded_second.so and calls second_entry(2); both built from reloaded_lib.c (x86-64)."""

from pathlib import Path

import pytest

from harness import assert_in_order, compile_program, hex_value
from scenario import Scenario


def reloaded_library(directory: Path, entry: str, first_instruction: str) -> Path:
    source = Path(__file__).parent / "programs" / "reloaded_lib.c"
    output = directory / f"libreloaded_{entry}.so"
    return compile_program(source, output, "-fPIC", "-shared", f"-DENTRY={entry}_entry",
                           f'-DFIRST_INSTRUCTION="{first_instruction}"')


def test_a_breakpoint_where_an_unloaded_library_was_stops_in_the_new_code(e2e, tmp_path):
    # Where the breakpoints go, the old code has a nop, the new one a pause (f3 90): a stub
    # showing the old code's saved byte under its breakpoint shows a nop there.
    first = reloaded_library(tmp_path, "first", "nop")
    second = reloaded_library(tmp_path, "second", "pause")
    s = Scenario(e2e, "reloads", str(first), "first_entry", str(second), "second_entry")
    r = s.gdb(
        "set breakpoint pending on",
        "break first_entry",
        "break second_entry",
        "continue",
        "print/x $pc",
        "x/i $pc",
        "continue",
        "print/x $pc",
        "x/i $pc",
        "print x",
        "continue",
    )
    assert_in_order(r.of("continue", 0), r"Breakpoint 1, first_entry \(x=1\)")
    first_pc = hex_value(r.of("print/x $pc", 0), r"= (0x[0-9a-f]+)")
    assert_in_order(r.of("continue", 1), r"Breakpoint 2, second_entry \(x=2\)")
    second_pc = hex_value(r.of("print/x $pc", 1), r"= (0x[0-9a-f]+)")
    if first_pc != second_pc:
        pytest.skip(f"the second library went elsewhere (0x{first_pc:x}, then 0x{second_pc:x}): "
                    "no breakpoint of the first was where the second's code is")
    # Reads show the new code's bytes, not the old code's saved under the breakpoint.
    assert_in_order(r.of("x/i $pc", 0), r"<first_entry\+\d+>:\s+nop")
    assert_in_order(r.of("x/i $pc", 1), r"<second_entry\+\d+>:\s+pause")
    assert r.value("print x") == "2"
    assert_in_order(r.of("continue", 2), r"\[Inferior 1 \(process \d+\) exited normally\]")
    s.server.wait_for(r"results: 10 20")
