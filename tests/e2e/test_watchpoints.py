"""Hardware watchpoints and breakpoints (x86 debug registers, Z1/Z2 packets).

Marked hw_watchpoint: on a machine (or VM) without usable debug registers, deselect
with -m "not hw_watchpoint" or set TPAGENT_E2E_NO_HW_WATCH=1. The scenarios are shared.py's,
which tests/arm64 runs too.
"""

import os

import pytest

import shared
from scenario import Scenario
from shared import X86_64

pytestmark = [
    pytest.mark.hw_watchpoint,
    pytest.mark.skipif(os.environ.get("TPAGENT_E2E_NO_HW_WATCH") == "1", reason="TPAGENT_E2E_NO_HW_WATCH=1"),
]


def test_watch_reports_old_and_new_values(e2e):
    shared.watchpoint_reports_old_and_new_values(Scenario(e2e, "basic"), X86_64)


def test_hardware_breakpoint(e2e):
    shared.hardware_breakpoint(Scenario(e2e, "basic"))


def test_access_watchpoint_sees_a_read(e2e):
    shared.access_watchpoint_sees_a_read(Scenario(e2e, "basic"), X86_64)
