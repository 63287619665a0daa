"""SVE registers on the arm64 board, against each stub: z, p, ffr and vg read and written at a
stop (gdb's v registers are z's low halves), and collected by a trap tracepoint's $regs.

sve.c sets z5 to 1, 2, 3... (64-bit lanes), z6 to zero and p3 to all-true for words, stops at
`sve_stop`, then prints z6's lanes 0 and 7 and p3's first byte. The board's CPU (-cpu max) has
SVE; its vector length is what $vg says (64-bit granules).
"""

from board import BoardScenario
from scenario import TO_MAIN, trace


def lanes(vg: int) -> str:
    return "{" + ", ".join(str(i) for i in range(1, vg + 1)) + "}"


def test_sve_registers_at_a_stop(arm64):
    s = BoardScenario(arm64, "sve")
    r = s.gdb(
        "break *sve_stop", "continue",
        "print $vg", "print $z5.d.u", "print $v5.d.u", "print/x $p3", "print/x $ffr",
        # gdb writes v as a whole z with zeroed upper bits (as the instructions do): v first.
        "set var $v6.d.u[0] = 0x77", "set var $z6.d.u[7] = 0x1234", "print/x $z6.d.u",
        "set var $p3 = {0x1, 0, 0, 0, 0, 0, 0, 0}", "continue",
    )
    vg = int(r.value("print $vg"))
    assert vg in (2, 4, 8, 16, 32), r.of("print $vg")
    assert r.value("print $z5.d.u") == lanes(vg)
    assert r.value("print $v5.d.u") == "{1, 2}"
    assert r.value("print/x $p3") == "{" + ", ".join(["0x11"] * vg) + "}"
    assert r.value("print/x $z6.d.u") == "{0x77, " + "0x0, " * (vg - 2) + "0x1234}"
    s.server.wait_for(r"^z6\.d\[0\]=0x77 z6\.d\[7\]=0x1234 p3\[0\]=0x1$")


def test_sve_registers_in_a_trace_frame(arm64):
    s = BoardScenario(arm64, "sve")
    define = s.define(*trace("*sve_stop", "collect $regs"))
    r = s.gdb(
        *TO_MAIN, define, "break _exit", "tstart", "continue", "tstop",
        "tfind 0", "print $vg", "print $z5.d.u", "print $v5.d.u", "print/x $p3", "print $pc == sve_stop",
        "tfind none", "delete", "continue",
    )
    vg = int(r.value("print $vg"))
    assert r.value("print $z5.d.u") == lanes(vg)
    assert r.value("print $v5.d.u") == "{1, 2}"
    assert r.value("print/x $p3") == "{" + ", ".join(["0x11"] * vg) + "}"
    assert r.value("print $pc == sve_stop") == "1"
    s.server.wait_for(r"^z6\.d\[0\]=0 z6\.d\[7\]=0 p3\[0\]=0x11$")
