"""FP/vector registers in fast tracepoint frames (x86-64): a fast tracepoint whose actions name
FP/vector registers (`collect $ymm15, $xmm14, $mxcsr`) has its pad save the thread's XSAVE
state and its frames carry it, so they read back in tfind and from a tsave -r file; one that
collects `$regs` stays on the general registers (as libinproctrace: the state costs a hit
more than the rest of its collection), its vector registers unavailable.

programs/ftrace_vector.c N: MXCSR 0x9f80, ymm15's lanes 1..8, then hit(i) for i < N with
xmm14's low quadword 100 + i.
"""

from pathlib import Path

import pytest

from scenario import TO_MAIN, TO_THE_END, FastTrace, ftrace, trace_to

PROGRAM = "ftrace_vector"
CALLS = 4
AVX = "avx" in Path("/proc/cpuinfo").read_text().split()
LANES = "{0x1, 0x2, 0x3, 0x4, 0x5, 0x6, 0x7, 0x8}"

pytestmark = [
    pytest.mark.skipif(not AVX, reason="this CPU has no AVX (ymm registers)"),
    pytest.mark.tpagent_only("libinproctrace collects the general registers only in fast frames"),
]


def vector_walk(s: FastTrace) -> str:
    return s.walk("i", "$xmm14.v2_int64[0]", "$mxcsr", "$ymm15.v8_int32[7]", "$xmm0.v2_int64[1] == $xmm0.v2_int64[1]")


def test_named_vector_registers_are_collected(e2e):
    """Each frame holds the thread's xmm14 of its call, ymm15 (xmm15 and its upper half) and
    MXCSR as the program set them, and the rest of the saved state reads as registers too
    ($xmm0); the same from a tsave -r file read by a new gdb."""
    s = FastTrace(e2e, PROGRAM, str(CALLS))
    define = s.define(ftrace(s.at("hit_entry"), "collect i, $ymm15, $xmm14, $mxcsr"))
    walk = vector_walk(s)
    saved = e2e.tmp / "vector.tf"
    r = s.gdb(
        *TO_MAIN, define, *trace_to("printf"), walk, "tfind 2", "print/x $ymm15.v8_int32",
        "print $mxcsr", f"tsave -r {saved}", "tfind none", *TO_THE_END,
    )
    rows = [(i, 100 + i, 0x9F80, 8, 1) for i in range(CALLS)]
    assert [row[2:] for row in r.frames(walk)] == rows, r.of(walk)
    assert r.value("print/x $ymm15.v8_int32") == LANES, r.of("print/x $ymm15.v8_int32")
    assert "FZ" in r.of("print $mxcsr"), r.of("print $mxcsr")
    s.ends_as_natively(r.of("continue", 2))

    t = s.open_trace_file(saved, walk, "tfind 1", "print/x $ymm15.v8_int32")
    assert [row[2:] for row in t.frames(walk)] == rows, t.of(walk)
    assert t.value("print/x $ymm15.v8_int32") == LANES


def test_regs_stay_on_the_general_registers(e2e):
    """`collect $regs` in a fast tracepoint: rip, rsp and the arguments are there, xmm14 is
    unavailable (the pad saves no vector state for it)."""
    s = FastTrace(e2e, PROGRAM, str(CALLS))
    define = s.define(ftrace(s.at("hit_entry"), "collect $regs"))
    walk = s.walk("$rdi")
    r = s.gdb(*TO_MAIN, define, *trace_to("printf"), walk, "tfind 1", "print $xmm14.v2_int64[0]", *TO_THE_END)
    assert [row[2] for row in r.frames(walk)] == list(range(CALLS)), r.of(walk)
    assert r.value("print $xmm14.v2_int64[0]") == "<unavailable>", r.of("print $xmm14.v2_int64[0]")
    s.ends_as_natively(r.of("continue", 2))
