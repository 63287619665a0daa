"""Static tracepoints on the arm64 board: an SDT marker is a 4-byte `nop`, exactly one B, so
`strace` at one runs from a pad like a fast tracepoint, and the in-process agent writes
`$_sdata` (the marker's arguments) into the frame; with no agent (--no-inject) a trap collects
the same frames.

sdt_markers.c (tests/e2e/programs): main calls step(i) for i = 0..N-1; step()'s marker
tpagent_test:step has the arguments i, i * 1234567890123, &total, the global counter
(2 * (i + 1)) and 7.
"""

import re

import pytest

from board import BoardFastTrace, BoardScenario
from scenario import TO_MAIN, TO_THE_END, past_gdb_strace_m_crashes

pytestmark = pytest.mark.tpagent_only("Debian's arm64 in-process agent crashes the programs it is loaded into")

ITERATIONS = 5


@pytest.mark.parametrize("collector", ["pad", "trap"])
def test_strace_collects_the_marker_arguments(arm64, collector):
    program = arm64.board.payload / "sdt_markers"

    def run():
        if collector == "pad":
            s = BoardFastTrace(arm64, "sdt_markers", str(ITERATIONS), program=program)
        else:
            s = BoardScenario(arm64, "sdt_markers", str(ITERATIONS), program=program, options=("--no-inject",))
        define = s.define("strace -m tpagent_test:step", "actions", "collect $_sdata", "end")
        return s, s.gdb(
            *TO_MAIN, define, "break finished", "print/x &total", "tstart", "monitor tracepoints", "continue",
            "tstop", "tstatus", "tfind start", "print $_sdata", "tfind 4", "print $_sdata", *TO_THE_END,
        )
    s, r = past_gdb_strace_m_crashes(run)
    how = r.of("monitor tracepoints")
    expected = r"jumps to its pad \(4 bytes" if collector == "pad" else r"is collected through a trap .*not loaded"
    assert re.search(rf"^Static tracepoint 2 at 0x[0-9a-f]+ {expected}", how, re.M), how
    r.trace_stopped("by a tstop command", ITERATIONS)
    total = r.value("print/x &total").split()[-1]
    assert r.value("print $_sdata") == f'"arg1=0 arg2=0 arg3={total} arg4=2 arg5=7"'
    assert r.value("print $_sdata", 1) == f'"arg1=4 arg2={4 * 1234567890123} arg3={total} arg4=10 arg5=7"'
    s.ends_as_natively(r.of("continue", 2))
