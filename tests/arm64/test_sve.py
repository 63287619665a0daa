"""SVE registers on the arm64 board, against each stub: z, p, ffr and vg read and written at a
stop (gdb's v registers are z's low halves), and collected by a trap tracepoint's $regs; and
in fast tracepoint frames where an action names them (a64_vector.c).

sve.c sets z5 to 1, 2, 3... (64-bit lanes), z6 to zero and p3 to all-true for words, stops at
`sve_stop`, then prints z6's lanes 0 and 7 and p3's first byte. The board's CPU (-cpu max) has
SVE; its vector length is what $vg says (64-bit granules).
"""

import pytest

from board import BoardFastTrace, BoardScenario
from scenario import TO_MAIN, TO_THE_END, ftrace, trace, trace_to


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


CALLS = 4
FZ = 1 << 24


@pytest.mark.tpagent_only("Debian's arm64 in-process agent crashes the programs it is loaded into")
def test_vector_registers_in_fast_frames(arm64):
    """A fast tracepoint naming FP/SIMD and SVE registers: its pad saves them (and gives them
    back: the program checks z15, p3 and fpcr after the loop). Each frame holds v14 (d14, in
    z14: gdb cannot collect v, a pseudo-register) of its call, z15's lanes, p3, ffr and fpcr as
    the program set them; the same from the file tsave -r writes on the board, read by
    gdb-multiarch."""
    s = BoardFastTrace(arm64, "a64_vector", str(CALLS))
    define = s.define(ftrace("*vector_hit", "collect $z14, $z15, $p3, $ffr, $fpcr"))
    walk = s.walk("$v14.d.u[0]", "$z15.s.u[0]", "$z15.s.u[$vg * 2 - 1]", "$fpcr", "$vg", tracepoint=2)
    on_board = f"/tmp/{s.server.name}-vector.tf"
    r = s.gdb(
        *TO_MAIN, define, *trace_to("finished"), walk, "tfind 1", "print/x $p3", "print $ffr == $ffr", "print $x0",
        f"tsave -r {on_board}", *TO_THE_END,
    )
    rows = r.frames(walk)
    vg = rows[0][-1] if rows else 0
    assert vg in (2, 4, 8, 16, 32), r.of(walk)
    assert [row[1:] for row in rows] == [(2, 100 + i, 1, 2 * vg, FZ, vg) for i in range(CALLS)], r.of(walk)
    assert r.value("print/x $p3") == "{" + ", ".join(["0x11"] * vg) + "}", r.of("print/x $p3")
    assert r.value("print $ffr == $ffr") == "1", r.of("print $ffr == $ffr")
    assert r.value("print $x0") == str(100 + 1), r.of("print $x0")  # the block's core comes along: d14's source
    s.server.wait_for(rf"^calls={CALLS} z15=kept p3=kept fpcr=kept$")
    s.ends_as_natively(r.of("continue", 2))

    saved = arm64.board.fetch_file(on_board, arm64.tmp / "vector.tf")
    # (target tfile numbers the file's tracepoints afresh: every frame, whichever number)
    every = s.walk("$v14.d.u[0]", "$z15.s.u[0]", "$z15.s.u[$vg * 2 - 1]", "$fpcr", "$vg")
    t = s.open_trace_file(saved, every, "tfind 2", "print/x $p3")
    assert [row[2:] for row in t.frames(every)] == [(100 + i, 1, 2 * vg, FZ, vg) for i in range(CALLS)], t.of(every)
    assert t.value("print/x $p3") == "{" + ", ".join(["0x11"] * vg) + "}"


@pytest.mark.tpagent_only("Debian's arm64 in-process agent crashes the programs it is loaded into")
def test_vector_registers_in_streaming_mode(arm64):
    """SME's streaming mode, where FFR cannot be read: the pad of a fast tracepoint naming SVE
    registers saves fpsr and fpcr only (no SIGILL), each frame has fpcr as the program set it
    and z0 <unavailable>, and the program ends as untraced with fpcr intact."""
    s = BoardFastTrace(arm64, "a64_streaming", "3")
    features = arm64.board_command("grep -m1 Features /proc/cpuinfo")
    define = s.define(ftrace("*streaming_hit", "collect $z0, $fpcr"))
    walk = s.walk("$fpcr", tracepoint=2)
    r = s.gdb(*TO_MAIN, features, define, *trace_to("finished"), walk, "tfind 1", "print $z0.d.u[0]", *TO_THE_END)
    if " sme" not in r.of(features):
        pytest.skip(f"the board's CPU has no SME: {r.of(features).strip()}")
    assert [row[1:] for row in r.frames(walk)] == [(2, FZ)] * 3, r.of(walk)
    assert r.value("print $z0.d.u[0]") == "<unavailable>", r.of("print $z0.d.u[0]")
    s.server.wait_for(r"^calls=3 fpcr=kept$")
    s.ends_as_natively(r.of("continue", 2))
