"""Hardware watchpoints and breakpoints (x86 debug registers, Z1/Z2 packets).

Marked hw_watchpoint: on a machine (or VM) without usable debug registers, deselect
with -m "not hw_watchpoint" or set TPAGENT_E2E_NO_HW_WATCH=1.
"""

import os

import pytest

from harness import assert_in_order
from scenario import Scenario

pytestmark = [
    pytest.mark.hw_watchpoint,
    pytest.mark.skipif(os.environ.get("TPAGENT_E2E_NO_HW_WATCH") == "1", reason="TPAGENT_E2E_NO_HW_WATCH=1"),
]


def test_watch_reports_old_and_new_values(e2e):
    s = Scenario(e2e, "basic")
    # The write is the last instruction of its line: the stop shows the loop head.
    loop_line = s.line("watch_loop")
    r = s.gdb("break main", "continue", "watch watched", *["continue"] * 3, "delete 2", "continue")
    assert_in_order(r.of("watch watched"), r"^Hardware watchpoint 2: watched$")
    for i, (old, new) in enumerate([(0, 10), (10, 20), (20, 30)]):
        assert_in_order(
            r.of("continue", i + 1),
            r"^Hardware watchpoint 2: watched$",
            rf"^Old value = {old}$",
            rf"^New value = {new}$",
            rf"^main \(\) at .*basic\.c:{loop_line}$",
        )
    # With the watchpoint gone the program runs to its end.
    assert_in_order(r.of("continue", 4), r"exited with code 03\]")


def test_hardware_breakpoint(e2e):
    r = Scenario(e2e, "basic").gdb("hbreak square", "continue", "continue", "delete", "continue")
    assert_in_order(r.of("hbreak square"), r"^Hardware assisted breakpoint 1 at 0x[0-9a-f]+: file .*basic\.c")
    assert_in_order(r.of("continue"), r"Breakpoint 1, square \(v=1\)")
    assert_in_order(r.of("continue", 1), r"Breakpoint 1, square \(v=2\)")
    assert_in_order(r.of("continue", 2), r"exited with code 03\]")


def test_access_watchpoint_sees_a_read(e2e):
    s = Scenario(e2e, "basic")
    r = s.gdb("break sum_squares", "continue", "awatch exit_code", "continue", "continue")
    assert_in_order(r.of("awatch exit_code"), r"^Hardware access \(read/write\) watchpoint 2: exit_code$")
    # main reads exit_code only in its return statement; the trap comes after the read,
    # which may be that line's last instruction.
    ret = s.line("main_return")
    assert_in_order(
        r.of("continue", 1),
        r"^Hardware access \(read/write\) watchpoint 2: exit_code$",
        r"^Value = 3$",
        rf"main \(\) at .*basic\.c:({ret}|{ret + 1})$",
    )
    assert_in_order(r.of("continue", 2), r"exited with code 03\]")
