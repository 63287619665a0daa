"""Hardware watchpoints and breakpoints (x86 debug registers, Z1/Z2 packets).

Marked hw_watchpoint: on a machine (or VM) without usable debug registers, deselect
with -m "not hw_watchpoint" or set TPAGENT_E2E_NO_HW_WATCH=1.
"""

import os

import pytest

from harness import assert_in_order

pytestmark = [
    pytest.mark.hw_watchpoint,
    pytest.mark.skipif(os.environ.get("TPAGENT_E2E_NO_HW_WATCH") == "1", reason="TPAGENT_E2E_NO_HW_WATCH=1"),
]


def test_watch_reports_old_and_new_values(e2e):
    program = e2e.program("basic")
    server = e2e.serve(program)
    # The write is the last instruction of its line: the stop shows the loop head.
    loop_line = e2e.line("basic", "watch_loop")
    r = e2e.gdb(
        server.remote,
        "break main",
        "continue",
        "watch watched",
        "continue",
        "continue",
        "continue",
        "delete 2",
        "continue",
        program=program,
    )
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
    program = e2e.program("basic")
    server = e2e.serve(program)
    r = e2e.gdb(server.remote, "hbreak square", "continue", "continue", "delete", "continue", program=program)
    assert_in_order(r.of("hbreak square"), r"^Hardware assisted breakpoint 1 at 0x[0-9a-f]+: file .*basic\.c")
    assert_in_order(r.of("continue"), r"Breakpoint 1, square \(v=1\)")
    assert_in_order(r.of("continue", 1), r"Breakpoint 1, square \(v=2\)")
    assert_in_order(r.of("continue", 2), r"exited with code 03\]")


def test_access_watchpoint_sees_a_read(e2e):
    program = e2e.program("basic")
    server = e2e.serve(program)
    r = e2e.gdb(server.remote, "break sum_squares", "continue", "awatch exit_code", "continue", "continue", program=program)
    assert_in_order(r.of("awatch exit_code"), r"^Hardware access \(read/write\) watchpoint 2: exit_code$")
    # main reads exit_code only in its return statement; the trap comes after the read,
    # which may be that line's last instruction.
    ret = e2e.line("basic", "main_return")
    assert_in_order(
        r.of("continue", 1),
        r"^Hardware access \(read/write\) watchpoint 2: exit_code$",
        r"^Value = 3$",
        rf"main \(\) at .*basic\.c:({ret}|{ret + 1})$",
    )
    assert_in_order(r.of("continue", 2), r"exited with code 03\]")
