"""Hardware watchpoints and breakpoints (x86 debug registers, Z1/Z2 packets).

Marked hw_watchpoint. Skipped, with gdb's words, where the CPU's debug registers do not fire
(usual in VMs: gdb's own native `watch` never stops there either); also with
TPAGENT_E2E_NO_HW_WATCH=1 or -m "not hw_watchpoint". The scenarios are shared.py's, which
tests/arm64 runs too.
"""

import os

import pytest

import shared
from harness import assert_in_order
from scenario import Scenario
from debug_registers import why_they_do_not_fire
from shared import X86_64

pytestmark = [
    pytest.mark.hw_watchpoint,
    pytest.mark.skipif(os.environ.get("TPAGENT_E2E_NO_HW_WATCH") == "1", reason="TPAGENT_E2E_NO_HW_WATCH=1"),
    pytest.mark.skipif(why_they_do_not_fire() is not None, reason=str(why_they_do_not_fire())),
]


def test_watch_reports_old_and_new_values(e2e):
    shared.watchpoint_reports_old_and_new_values(Scenario(e2e, "basic"), X86_64)


def test_hardware_breakpoint(e2e):
    shared.hardware_breakpoint(Scenario(e2e, "basic"))


def test_access_watchpoint_sees_a_read(e2e):
    shared.access_watchpoint_sees_a_read(Scenario(e2e, "basic"), X86_64)


def test_a_watchpoint_the_debug_registers_cannot_hold_is_refused_as_an_error(e2e):
    """watch watched takes one debug register; 32 bytes more need four: the stub answers
    that Z2 with an error, so gdb says it could not insert the watchpoint. An empty reply
    (what a stub answers for a packet it does not support) after gdb had the first accepted
    made gdb report "Protocol error: Z2 (write-watchpoint) conflicting enabled responses"
    (gdb.base/watchpoint.exp)."""
    s = Scenario(e2e, "basic")
    r = s.gdb("break main", "continue", "watch watched", "watch *(char (*)[32]) &squares", "continue",
              "delete", "continue")
    assert_in_order(r.of("continue", 1), r"Could not insert hardware watchpoint [23]\.")
    assert "Protocol error" not in r.transcript, r.of("continue", 1)
    assert_in_order(r.of("continue", 2), r"\[Inferior 1 \(process \d+\) exited with code 03\]")
