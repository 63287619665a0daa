"""Faults: the traced program dies mid-trace, by SIGSEGV or by exit(), its tracepoints still
in place. Every hit before its end is a frame, whole; tstatus tells the trace is over; the
frames read right (tfind, tdump) and `tsave -r` writes a file `target tfile` reads the same.

faults_dies.c HITS HOW: record_hit(i) for i = 0 .. HITS - 1, then a null pointer write
(segv) or exit(3) (exit). The tracepoint, on record_hit's first line (a fast one, or a trap
one), collects iteration, hits (== iteration there) and last_square (the previous hit's
square).

- gdb stops at the fatal signal: the trace is still running, gdb stops it and reads and saves
  it before the program goes. gdbserver does the same: this one runs on both.
- gdb stays connected (extended-remote) while the program goes: tpagent stops the trace
  itself ("Trace stopped by an error (process N exited with status 3)": gdb has no stop
  reason for a program's end, and an error's text can say it),
  and keeps the frames for tsave -r. gdbserver keeps saying "Trace is running" about a trace
  whose program is gone, and has no QTSave. (gdb itself cannot show a frame there: with no
  thread, tfind says "No registers.", and tdump hits an internal error of gdb 13, so the frames
  are read from the file.)
- gdb away (disconnected tracing, detached) when the program dies: a new gdb finds the trace
  stopped, reads it and saves it. test_exit_while_disconnected.py has the trap tracepoint and
  exit(); here are the death by the program's own SIGSEGV and the fast tracepoint's cases.
  gdbserver exits with its program there.
"""

import pytest

from harness import assert_in_order, pid_alive, wait_until
from scenario import TO_MAIN, FastTrace, Scenario, ftrace, record_reliability, trace

PROGRAM = "faults_dies"
HITS = 7
EXIT_CODE = 3  # faults_dies.c's
ANCHOR = "print/x &record_hit"  # where the run has the program (Scenario.open_trace_file)
# gdb names the thread where the program has more than one (gdbserver's agent has a thread).
SIGSEGV_STOP = r'^(Program|Thread 1 "[^"]+") received signal SIGSEGV, Segmentation fault\.$'
SIGSEGV_END = (r"^Program terminated with signal SIGSEGV, Segmentation fault\.$", r"^The program no longer exists\.$")
KEPT = r"^Process \d+ ended during a disconnected trace; the trace is kept for gdb$"
KINDS = pytest.mark.parametrize("fast", [False, True], ids=["trap", "fast"])
DIES = "The traced program dies mid-trace (SIGSEGV or exit; gdb connected or away)"


def dying(e2e, how: str, fast: bool, extended: bool = False) -> Scenario:
    """faults_dies HITS HOW, under a Scenario for FAST tracepoints or trap ones."""
    return (FastTrace if fast else Scenario)(e2e, PROGRAM, str(HITS), how, extended=extended)


def define_hits(s: Scenario, fast: bool) -> str:
    return s.define((ftrace if fast else trace)(s.at("record_entry"), "collect iteration, hits, last_square"))


def walk_hits(s: Scenario) -> str:
    return s.walk("iteration", "hits", "last_square")


def expected_frames(tracepoint: int) -> list[tuple[int, ...]]:
    """A frame per hit, in order: (frame, tracepoint, iteration, hits, last_square)."""
    return [(k, tracepoint, k, k, (k - 1) ** 2 if k else 0) for k in range(HITS)]


def frames_read_right(r, walk: str, tracepoint: int) -> None:
    """The walk finds exactly HITS frames, each holding its hit; frame 3 reads right."""
    assert r.frames(walk) == expected_frames(tracepoint), r.of(walk)
    assert r.found("tfind 3") == (3, tracepoint)
    assert [r.value(f"print {name}") for name in ("iteration", "hits", "last_square")] == ["3", "3", "4"]
    r.dumped(tracepoint, 3, r"^iteration = 3$", r"^hits = 3$", r"^last_square = 4$")


LOOK = ("tfind 3", "print iteration", "print hits", "print last_square", "tdump")


def file_holds_the_frames(s: Scenario, trace_file, live, stopped: str) -> None:
    """A new gdb reads TRACE_FILE (target tfile): the trace stopped STOPPED, HITS frames, the
    same as live."""
    walk = walk_hits(s)
    t = s.open_trace_file(trace_file, "tstatus", walk, *LOOK, live=live)
    status = t.status()
    assert (status.file, status.stopped, status.collected) == (True, stopped, HITS), status
    frames_read_right(t, walk, 1)


@KINDS
def test_frames_read_at_the_fatal_signal(e2e, fast):
    """gdb connected: the SIGSEGV stops the program with the trace running and all the frames
    there; gdb stops the trace, reads and saves it; continued, the program dies as it does
    natively."""
    s = dying(e2e, "segv", fast)
    walk = walk_hits(s)
    on_host, on_target = e2e.tmp / "host.tf", e2e.tmp / "target.tf"
    saves = [f"tsave {on_host}"] + ([] if e2e.is_gdbserver else [f"tsave -r {on_target}"])
    r = s.gdb(*TO_MAIN, define_hits(s, fast), ANCHOR, "tstart", "continue", "tstatus", "tstop", "tstatus",
              walk, *LOOK, *saves, "tfind none", "continue")
    assert_in_order(r.of("continue", 1), SIGSEGV_STOP, rf"^{s.line('segv')}\s.*MARK: segv")
    running = r.status()
    assert (running.running, running.collected) == (True, HITS), running
    r.trace_stopped("by a tstop command", HITS, nth=1)
    frames_read_right(r, walk, 2)
    assert all(r.of(save).strip() == "" for save in saves), [r.of(save) for save in saves]
    assert_in_order(r.of("continue", 2), *SIGSEGV_END)
    assert s.reference.returncode == -11
    s.prints_as_natively()
    for saved in (on_host, *([] if e2e.is_gdbserver else [on_target])):
        file_holds_the_frames(s, saved, r, "by a tstop command")
    record_reliability(DIES, 1, HITS)


@pytest.mark.tpagent_only("gdbserver reports a trace running after its program is gone, and has no tsave -r")
@pytest.mark.parametrize("how", ["segv", "exit"])
@KINDS
def test_the_program_ending_stops_the_trace(e2e, fast, how):
    """gdb connected with extended-remote (target remote closes the connection when the
    program goes): the program dies with the trace running; tstatus then says the trace has
    stopped, every frame kept, and tsave -r saves them."""
    s = dying(e2e, how, fast, extended=True)
    saved = e2e.tmp / "target.tf"
    # A SIGSEGV stops the program first (the trace still running), then ends it.
    ends = ["continue", "tstatus", "continue"] if how == "segv" else ["continue"]
    r = s.gdb(*TO_MAIN, define_hits(s, fast), ANCHOR, "tstart", *ends, "tstatus", f"tsave -r {saved}")
    if how == "segv":
        assert_in_order(r.of("continue", 1), SIGSEGV_STOP)
        assert r.status().running, r.status()
        assert_in_order(r.of("continue", 2), *SIGSEGV_END)
    else:
        s.exited(r.of("continue", 1), EXIT_CODE)
    assert s.reference.returncode == (-11 if how == "segv" else EXIT_CODE)
    s.prints_as_natively()
    after = r.status(1 if how == "segv" else 0)
    assert (after.running, after.stopped, after.collected) == (False, "by an error", HITS), after
    why = (f"process {s.pid} was killed by SIGSEGV" if how == "segv"
           else f"process {s.pid} exited with status {EXIT_CODE}")
    assert f"Trace stopped by an error ({why})." in after.text, after.text
    assert r.of(f"tsave -r {saved}").strip() == ""
    file_holds_the_frames(s, saved, r, "by an error")
    record_reliability(DIES, 1, HITS)


@pytest.mark.tpagent_only("gdbserver exits when the program ends during a disconnected trace")
@pytest.mark.parametrize(
    "fast, how", [(False, "segv"), (True, "segv"), (True, "exit")], ids=["trap-segv", "fast-segv", "fast-exit"]
)
def test_a_death_while_gdb_is_away(e2e, fast, how):
    """Disconnected tracing, gdb detached: the program dies unwatched. A new gdb finds the trace
    stopped with every hit, reads it and saves it with tsave -r; `continue` tells it how the
    program ended."""
    s = dying(e2e, how, fast)
    first = s.gdb(*TO_MAIN, define_hits(s, fast), ANCHOR, "set disconnected-tracing on", "tstart", "detach")
    assert_in_order(first.of("detach"), rf"^\[Inferior 1 \(process {s.pid}\) detached\]$")
    segv, exited = r"Child terminated with signal = 0xb \(SIGSEGV\)", f"Child exited with status {EXIT_CODE}"
    s.server.wait_for(rf"^{segv if how == 'segv' else exited}$")
    s.server.wait_for(KEPT)
    assert wait_until(lambda: not pid_alive(s.pid)), "the program is still there"
    s.prints_as_natively()

    saved = e2e.tmp / "target.tf"
    walk = walk_hits(s)
    r = s.gdb("tstatus", walk, *LOOK, f"tsave -r {saved}", "tfind none", "continue")
    assert_in_order(r.of(s.connect), r"^Created tracepoint 1 for target's tracepoint 2 at 0x[0-9a-f]+\.$")
    status = r.trace_stopped("by an error", HITS)
    assert (status.running, status.on_disconnect) == (False, "continue"), status
    frames_read_right(r, walk, 1)
    assert r.of(f"tsave -r {saved}").strip() == ""
    if how == "segv":
        assert_in_order(r.of("continue"), *SIGSEGV_END)
    else:
        s.exited(r.of("continue"), EXIT_CODE)
    assert s.server.wait_exit() == 0
    file_holds_the_frames(s, saved, first, "by an error")
    record_reliability(DIES, 1, HITS)
