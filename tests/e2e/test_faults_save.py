"""Faults: tsave -r when the file cannot be written whole. The target's write fails part way
(here a file size limit, as a full disk would): gdb gets the error, no partial file is left,
a file already under that name is intact, and the session and the trace go on."""

import re

import pytest

from scenario import TO_MAIN, Scenario, measure_trace_file, record_reliability, trace, trace_to

pytestmark = pytest.mark.tpagent_only("gdbserver does not implement QTSave (tsave -r)")

FILE_SIZE_LIMIT = 32768
TRACEPOINT = trace("record_hit", "collect $regs", "collect iteration")


def test_a_file_too_large_is_an_error_and_leaves_the_old_file(e2e):
    # A frame's size is the CPU's (its register block): enough frames for a file twice the
    # limit, and an empty trace's file within it, measured here.
    size = measure_trace_file(e2e, "traced", TRACEPOINT)
    assert size.empty < FILE_SIZE_LIMIT, size
    frames = size.frames_over(2 * FILE_SIZE_LIMIT)
    last = frames - 1
    old = e2e.tmp / "trace.tf"
    old.write_bytes(b"the trace saved before\n")
    s = Scenario(e2e, "traced", str(frames), launcher=("prlimit", f"--fsize={FILE_SIZE_LIMIT}", "--"))
    define = s.define(TRACEPOINT)
    small = e2e.tmp / "small.tf"
    r = s.gdb(*TO_MAIN, define, *trace_to("finished", tstatus=False), f"tsave -r {old}", "tstatus",
              f"tfind {last}", "print iteration", "tfind none", "tstart", "tstop", f"tsave -r {small}")
    assert re.search(rf"cannot write {re.escape(str(old))}: File too large", r.of(f"tsave -r {old}")), r.of(f"tsave -r {old}")
    assert old.read_bytes() == b"the trace saved before\n"
    assert sorted(p.name for p in e2e.tmp.glob("*.tf*")) == ["small.tf", "trace.tf"], list(e2e.tmp.iterdir())
    # The trace is all there, and tpagent goes on (a new run, saved small enough).
    assert r.status().frames == frames, r.of("tstatus")
    assert r.value("print iteration") == str(last)
    assert 0 < small.stat().st_size <= FILE_SIZE_LIMIT
    assert s.server.running
    record_reliability("File size limit (RLIMIT_FSIZE) hit during `tsave -r`", 1, frames)
