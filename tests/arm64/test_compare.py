"""tpagent side by side with Debian's arm64 gdbserver 13.1 on the same board: the same
program, the same tracepoints, the same gdb commands must print the same trace.

traced.c, 3 iterations: record_hit() collects $regs and $args, its return line $locals,
globals, a struct, memory ranges, a string and an expression, other_hit() a trace state
variable, stepped() two while-stepping frames. Both stubs start the program the same way
(no address randomisation), so even addresses and stack contents must agree.
"""

import difflib
import re

import shared
from scenario import TO_MAIN, trace, trace_to, while_stepping
from board import BoardScenario

PROGRAM = "traced"
# A register line of tdump / info registers: "NAME  RAW  NATURAL".
REGISTER_LINE = re.compile(r"^([a-z][a-z0-9_]*)\s{2,}(\S.*)$", re.M)
# What both stubs describe: gdb's org.gnu.gdb.aarch64.core and .fpu features.
CORE_AND_FPU = {f"x{i}" for i in range(31)} | {"sp", "pc", "cpsr", "fpsr", "fpcr"} | {f"v{i}" for i in range(32)}


def every_frame(s: BoardScenario) -> str:
    """A command running tdump in every trace frame, from the first."""
    return s.file("tfind start", "while $trace_frame != -1", "  tdump", "  tfind", "end")


def traced_run(arm64) -> tuple[str, str]:
    """The trace of traced.c 3 under this stub: (every frame's tdump, info registers in frame 0)."""
    s = BoardScenario(arm64, PROGRAM, "3")
    define = s.define(
        "tvariable $calls = 7",
        *shared.record_hit_traces(s),
        trace("other_hit", "teval $calls = $calls * 2", "collect $calls, iteration"),
        trace("stepped", "collect x", while_stepping(2, "collect $pc, $sp, $x0")),
    )
    dump = every_frame(s)
    r = s.gdb(*TO_MAIN, define, *trace_to("finished"), dump, "tfind 0", "info registers")
    assert r.status().collected == 3 * 6, r.status()
    return r.of(dump), r.of("info registers")


def core_and_fpu(text: str) -> list[str]:
    """The lines of info registers that show a core or FP/SIMD register, sorted."""
    return sorted(line for line in text.splitlines() if (m := REGISTER_LINE.match(line)) and m.group(1) in CORE_AND_FPU)


def test_same_tdump_as_gdbserver(both):
    """Every frame's tdump, byte for byte, in the registers both describe (core and fpu)."""
    ours, ours_regs = traced_run(both["tpagent"])
    theirs, theirs_regs = traced_run(both["gdbserver"])

    def without_extra_registers(text: str) -> str:
        return "\n".join(
            line for line in text.splitlines() if not (m := REGISTER_LINE.match(line)) or m.group(1) in CORE_AND_FPU
        )

    # What only gdbserver describes (SVE, pointer authentication, TLS...), for the record.
    ours_names, theirs_names = ({name for name, _ in REGISTER_LINE.findall(text)} for text in (ours_regs, theirs_regs))
    print("registers only gdbserver shows:", sorted(theirs_names - ours_names))

    a, b = without_extra_registers(ours), without_extra_registers(theirs)
    assert a == b, "\n".join(difflib.unified_diff(b.splitlines(), a.splitlines(), "gdbserver", "tpagent", lineterm=""))
    # A real trace, not two empty ones agreeing: 18 frames, record_hit(2)'s x0 is 2.
    assert len(re.findall(r"^Data collected at tracepoint \d+, trace frame \d+:$", ours, re.M)) == 18
    assert re.search(r"^Data collected at tracepoint 2, trace frame 12:\n(.*\n)*?x0\s+0x2\s+2$", ours, re.M), ours
    a, b = core_and_fpu(ours_regs), core_and_fpu(theirs_regs)
    assert a == b, "\n".join(difflib.unified_diff(b, a, "gdbserver", "tpagent", lineterm=""))
