"""Stress: tracing never harms a program whose memory map keeps changing, for a minute.

programs/stress_maps.c maps, unmaps, protects and remaps one page in a loop (the page's
state and content follow from the iteration number i alone) and calls traced(i, p) with p
pointing into that page; it raises no signal itself and prints a line that does not depend
on tracing. Under tpagent with the in-process agent, gdb puts a fast tracepoint (ftrace) on
one line of traced() and a trap tracepoint (trace) on the next, both collecting i and
p[0]@8, starts the trace, and then, for TPAGENT_STRESS_SECONDS (default 60) of the
program's wall time, keeps continuing to a breakpoint on checkpoint(), and in some rounds
next-steps or stepi-steps through traced() or stops right on both tracepoints and steps
off them, deletes and re-creates the checkpoint breakpoint, and writes a global the program
never reads. Why: each of these meets a collector reading memory that may vanish under it,
a jump pad or a trap under a single-step, a breakpoint on a tracepoint; the issue asks for
all of them together, for long enough that a rare race shows (also under an ASan+UBSan
tpagent).

What must hold:
- gdb never reports a signal (the program raises none: any would be tpagent's doing), and
  the server's output holds no sanitizer report;
- frames exact: tstatus counts exactly two frames per call of traced() made while the trace
  ran (the program's own counter, read by gdb), one per tracepoint per call, in order;
- in the trace file written by `tsave -r`, read by `tpdump --json`, each frame holds i, and
  p[0]@8 with the program's content exactly when the page was readable at iteration i
  (for the trap tracepoint also when it was PROT_NONE: the server reads such a page, as
  gdb's own reads do), else no memory of the page at all;
- the program then runs to its end and prints what a native run of as many iterations does.

The whole test stops by itself: the program ends its loop after the given seconds, gdb is
killed after a margin, and pytest's timeout is set from the same number.
"""

import os
import re

import pytest

from harness import assert_in_order, hex_value
from scenario import TO_MAIN, FastTrace, ftrace, native_run, tpdump, trace

PROGRAM = "stress_maps"
SECONDS = float(os.environ.get("TPAGENT_STRESS_SECONDS", "60"))
# The program stops after this many iterations even if time is left: it bounds the frames
# (two per iteration), hence the trace buffer and the trace file.
MAX_ITERATIONS = 20000
# A fast frame costs at most a whole register block (2.5 KiB on x86-64 with AVX-512, the
# largest) in the buffer: room for every frame MAX_ITERATIONS can make, with a margin.
BUFFER_BYTES = 128 << 20
# Time for what is not the stress loop (starting, saving, reading back), and slack.
MARGIN = 180
# TO_MAIN's breakpoint is gone: the tracepoints are 2 and 3, then come gdb's breakpoints.
FAST_TP, TRAP_TP = 2, 3
# stress_maps.c's page layout and content.
WORDS, SLOTS, SLOT_BYTES = 8, 16, 256
RESULT = re.compile(r"^iterations=(\d+) traced=(\d+) checksum=(\d+)$", re.M)
# What would show harm: a signal gdb reports, a sanitizer's report in tpagent's output.
SIGNAL_REPORTS = re.compile(r"Program received signal|Program terminated with signal|\bSIG(SEGV|BUS|TRAP|ILL)\b")
SANITIZER_REPORTS = re.compile(r"ERROR: (Address|Leak)Sanitizer|runtime error:|SUMMARY: \w+Sanitizer")
# The page's state at iteration i is MODES[i % 4].
MODES = ("written (readable)", "unmapped", "PROT_NONE", "remapped (readable)")


def readable(i: int) -> bool:
    """Whether the program can read the page at iteration i."""
    return i % 4 in (0, 3)


def collectable(tracepoint: int, i: int) -> bool:
    """Whether the tracepoint's collector can read the page at iteration i. The fast one
    reads in the program, as the program can. The trap one is read by the server through
    /proc/PID/mem, which, like gdb's own reads of a traced process, reads a PROT_NONE page too
    (see test_never_harm.py's test_collecting_through_memory_that_goes_away): it then finds
    what the program wrote there at iteration i, before its mprotect."""
    return readable(i) or (tracepoint == TRAP_TP and MODES[i % 4] == "PROT_NONE")


def page_words(i: int) -> bytes:
    """What the program writes to p[0]@WORDS at iteration i (but in an unmapped page)."""
    return b"".join((i * 1000003 + k * 7919 + 1).to_bytes(8, "little", signed=True) for k in range(WORDS))


def slot_address(page: int, i: int) -> int:
    return page + (i * 5) % SLOTS * SLOT_BYTES


# --------------------------------------------------------------------------- gdb's side


def stress_loop(s: FastTrace) -> str:
    """Until the program leaves its loop: continue to checkpoint(), then by round number
    either nothing more, next through traced() (over both tracepoint lines, stepping over
    the calls), stepi through all of traced() and its callees, or stop on each tracepoint's
    own address and stepi off it; every fifth round the checkpoint breakpoint is deleted and
    made anew; every round writes poked. Each special round says so (printf), and the file
    ends with a line saying it got there: an error (which aborts a sourced file) shows as
    that line missing."""
    fast, trap = s.at("fast"), s.at("trap")
    in_traced = '$_any_caller_matches("^traced$", 1)'  # traced() or a function it called
    return s.file(
        "set $round = 0",
        "while !leaving",
        "  continue",
        "  if !leaving",
        "    set $kind = $round % 6",
        "    if $kind == 1",
        '      printf "round %d: next through traced\\n", $round',
        "      tbreak traced",
        "      continue",
        f"      while {in_traced}",
        "        next",
        "      end",
        "    end",
        "    if $kind == 3",
        '      printf "round %d: break on both tracepoints\\n", $round',
        f"      tbreak {fast}",
        "      continue",
        "      if !leaving",
        "        stepi",
        f"        tbreak {trap}",
        "        continue",
        "        stepi",
        "      end",
        "    end",
        "    if $kind == 5",
        '      printf "round %d: stepi through traced\\n", $round',
        "      tbreak traced",
        "      continue",
        f"      while {in_traced}",
        "        stepi",
        "      end",
        "    end",
        "    if $round % 5 == 2",
        "      delete $checkpoint",
        "      break checkpoint",
        "      set $checkpoint = $bpnum",
        "    end",
        "    set var poked = $round",
        "    set $poked = $round",
        "  end",
        "  set $round = $round + 1",
        "end",
        'printf "stress loop done after %d rounds\\n", $round',
    )


# --------------------------------------------------------------------------- the checks


def excerpt(text: str, at: int) -> str:
    """The part of a long transcript around offset AT."""
    return text[max(0, at - 6000) : at + 2000]


def frame_iteration(frame: dict, i_address: int, p_address: int, page: int) -> tuple[int, str | None]:
    """The iteration a frame is from, and what is wrong with its memory (None: nothing).
    Right is: i's slot; perhaps p's slot (gdb's expression for p[0]@8 reads p, and may
    record it); the page's words, with the program's content of iteration i, exactly when
    the page was collectable at that iteration; nothing else."""
    blocks = {int(b["address"], 16): bytes.fromhex(b["hex"]) for b in frame["memory"]}
    assert i_address in blocks and len(blocks[i_address]) == 8, f"no i in {frame}"
    i = int.from_bytes(blocks.pop(i_address), "little", signed=True)
    stack = blocks.pop(p_address, None)
    if stack is not None and int.from_bytes(stack, "little") != slot_address(page, i):
        return i, "p is not the iteration's"
    if any(not page <= address < page + 4096 for address in blocks):
        return i, "memory neither i, p nor the page's"
    if not collectable(frame["tracepoint"], i):
        return i, "page memory collected where the collector cannot read the page" if blocks else None
    if not blocks:
        return i, "page memory missing where the collector can read the page"
    return i, None if blocks == {slot_address(page, i): page_words(i)} else "wrong page memory"


def check_frames(frames: list[dict], calls: int, i_address: int, p_address: int, page: int) -> None:
    """Each tracepoint has one frame per call, 0 .. calls - 1 in order, and no frame has
    wrong memory; a failure counts the wrong frames by tracepoint, page state and problem,
    with the first frame of each kind."""
    iterations = {FAST_TP: [], TRAP_TP: []}
    wrong: dict[tuple[int, str, str], list[dict]] = {}
    for frame in frames:
        assert frame["tracepoint"] in iterations, frame
        i, problem = frame_iteration(frame, i_address, p_address, page)
        iterations[frame["tracepoint"]].append(i)
        if problem is not None:
            wrong.setdefault((frame["tracepoint"], MODES[i % 4], problem), []).append(frame)
    summary = "\n".join(
        f"tracepoint {tp}, page {mode}: {problem}: {len(found)} frames, the first:\n  {found[0]}"
        for (tp, mode, problem), found in sorted(wrong.items())
    )
    assert not wrong, f"page at {page:#x}, i at {i_address:#x}, p at {p_address:#x}; wrong frames:\n{summary}"
    assert iterations[FAST_TP] == list(range(calls)), "fast tracepoint frames not one per call, in order"
    assert iterations[TRAP_TP] == list(range(calls)), "trap tracepoint frames not one per call, in order"


@pytest.mark.stress
@pytest.mark.tpagent_only("gdbserver's in-process agent reads collected memory with a plain memcpy, unguarded")
@pytest.mark.timeout(SECONDS + 2 * MARGIN)
def test_maps_change_under_tracing_stepping_and_breakpoints(e2e):
    s = FastTrace(e2e, PROGRAM, str(MAX_ITERATIONS), str(SECONDS))
    trace_file = e2e.tmp / "stress.tf"
    collect = f"collect i, p[0]@{WORDS}"
    define = s.define(ftrace(s.at("fast"), collect), trace(s.at("trap"), collect))
    loop = stress_loop(s)
    # (FastTrace: no warning that the target lacks fast tracepoints at tstart, no refusal.)
    r = s.gdb(
        *TO_MAIN, define, f"set trace-buffer-size {BUFFER_BYTES}",
        "tbreak traced", "continue", "print/x &i", "print/x &p", "print/x page",
        "break checkpoint", "set $checkpoint = $bpnum", "break finished", "tstart", "print traced_calls",
        loop,
        "print leaving", "print traced_calls", "print last_i", "print poked == $poked",
        "tstop", "tstatus", f"tsave -r {trace_file}", "delete", "continue",
        timeout=SECONDS + MARGIN,
    )
    assert_in_order(
        r.of(define),
        rf"^Fast tracepoint {FAST_TP} at 0x[0-9a-f]+: file .*{PROGRAM}\.c, line {s.line('fast')}\.$",
        rf"^Tracepoint {TRAP_TP} at 0x[0-9a-f]+: file .*{PROGRAM}\.c, line {s.line('trap')}\.$",
    )
    harm = SIGNAL_REPORTS.search(r.output)
    assert harm is None, f"gdb reported {harm.group(0)!r}:\n{excerpt(r.output, harm.start())}"
    done = re.search(r"^stress loop done after \d+ rounds$", r.of(loop), re.M)
    assert done, f"the stress loop stopped early:\n{excerpt(r.of(loop), len(r.of(loop)))}"
    for kind in ("next through traced", "break on both tracepoints", "stepi through traced"):
        assert re.search(rf"^round \d+: {kind}$", r.of(loop), re.M), f"no round did {kind!r}"

    i_address = hex_value(r.of("print/x &i"), r"= 0x([0-9a-f]+)")
    p_address = hex_value(r.of("print/x &p"), r"= 0x([0-9a-f]+)")
    page = hex_value(r.of("print/x page"), r"= 0x([0-9a-f]+)")
    # The trace started in the first call, before its traced lines.
    assert r.value("print traced_calls") == "0"
    assert r.value("print leaving") == "1"
    calls = int(r.value("print traced_calls", 1))
    assert calls > 0 and r.value("print last_i") == str(calls - 1)
    assert r.value("print poked == $poked") == "1"

    # Frames exact: one per tracepoint per call, whatever gdb did in between.
    r.trace_stopped("by a tstop command", 2 * calls)
    assert r.of(f"tsave -r {trace_file}").strip() == "", r.of(f"tsave -r {trace_file}")

    # The program's own result, the same as a native run of as many iterations.
    s.exited(r.of("continue", 2), 0)
    result = s.server.wait_for(RESULT, timeout=MARGIN)
    assert int(result.group(2)) == calls
    reference = native_run(s.program, result.group(1))
    assert reference.returncode == 0 and reference.stdout == result.group(0) + "\n", (reference, result.group(0))
    s.server.wait_exit()
    reports = SANITIZER_REPORTS.search(s.server.output)
    assert reports is None, f"sanitizer report in the server's output:\n{s.server.output[-20000:]}"

    # Last, the frames one by one (the longest report, if they are wrong); without
    # registers (a fast frame's block is large).
    frames = tpdump(trace_file, "--registers", "none", timeout=MARGIN)
    assert len(frames) == 2 * calls
    check_frames(frames, calls, i_address, p_address, page)
