"""The flight recorder (--record DIR): a trace run's frames go into rotating trace files in DIR
while the run goes on, the in-memory buffer only their way there. programs/ftrace_loop.c with
a fast tracepoint and a trap tracepoint collecting $regs: far more bytes of frames than the
buffer holds.
"""

from pathlib import Path

import pytest

from scenario import TO_MAIN, TO_THE_END, Scenario, ftrace, parse_frames, trace, trace_to

pytestmark = pytest.mark.tpagent_only("gdbserver has no recording")

PROGRAM = "ftrace_loop"
CALLS = 3000  # x 2 tracepoints x 1 to 3 KB a frame ($regs: the CPU's XSAVE state decides)
BUFFER = 1 << 20


def recorded(directory: Path) -> list[Path]:
    return sorted(directory.glob("trace-*.tf"))


def run(e2e, directory: Path, *options: str):
    s = Scenario(e2e, PROGRAM, str(CALLS), options=("--record", str(directory), *options))
    define = s.define(*ftrace("traced", "collect $regs, n"), *trace("leaf", "collect $regs"))
    r = s.gdb(*TO_MAIN, f"set trace-buffer-size {BUFFER}", define, *trace_to("finished"), *TO_THE_END)
    s.ends_as_natively(r.of("continue", 2))
    return s, r


def test_every_frame_is_in_the_files(e2e):
    """With every file kept: the files hold each of the 2 x CALLS frames exactly once, in
    collection order (traced(i) then leaf(i): rdi is i in both), though the buffer holds a
    fraction of them; each file ends whole and opens alone in gdb (target tfile)."""
    directory = e2e.tmp / "all"
    directory.mkdir()
    s, r = run(e2e, directory, "--record-size", "1M")
    files = recorded(directory)
    # (Measured, not assumed: the frames' size depends on the CPU's registers.)
    assert sum(f.stat().st_size for f in files) > 4 * BUFFER and len(files) >= 4, files
    walk = s.walk("$rdi")
    calls = []
    for f in files:
        t = s.gdb(f"target tfile {f}", walk, connect=False)
        calls += [row[2] for row in parse_frames(t.of(walk))]
    assert calls == [i for i in range(CALLS) for _ in range(2)], calls[:20]
    # tstatus says so, and that nothing was lost.
    note = r.of("tstatus")
    assert f"recorded {2 * CALLS} frame(s) into {len(files)} file(s) in {directory}" in note, note
    assert "lost" not in note and "not collected" not in note, note


def test_the_newest_files_are_kept(e2e):
    """--record-files 3: three files stay, the newest, the last of them holding the last
    call's frame."""
    directory = e2e.tmp / "three"
    directory.mkdir()
    s, r = run(e2e, directory, "--record-size", "256K", "--record-files", "3")
    files = recorded(directory)
    assert len(files) == 3, files
    assert "oldest removed" in r.of("tstatus"), r.of("tstatus")
    walk = s.walk("$rdi")
    t = s.gdb(f"target tfile {files[-1]}", walk, connect=False)
    assert parse_frames(t.of(walk))[-1][2] == CALLS - 1, t.of(walk)
