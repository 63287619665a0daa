"""A Go program on the arm64 board (programs/ftrace_goroutines.go built for arm64, static
without cgo; skipped without Debian's golang-go on the host): goroutines on several threads hit
a fast tracepoint whose pad runs on an agent stack, never on the goroutine's own small stack
(found through the goroutine in x28: its M's unused tls words), with the agent's image placed
in the program.
"""

import re

import pytest

from board import BoardScenario
from scenario import parse_frames

pytestmark = pytest.mark.tpagent_only("gdbserver traces fast only with libinproctrace.so preloaded")

ROUNDS = 20
GOROUTINES = 4


def test_goroutines_hit_pads_on_agent_stacks(arm64):
    """Every call of work(n, k) is a frame with n in x0 and k in x1 (Go's register ABI, at its
    entry), collected by a pad (`monitor tracepoints` shows the jump; tstart names only the
    one in runtime.clone, collected through a trap, then disabled); sp is the goroutine's and
    tpidr the program's; the stacks the pads ran on were taken by threads, none missed; the
    frames read the same from a `tsave -r` file; the program ends as natively."""
    program = arm64.board.payload / "ftrace_goroutines"
    if not program.exists():
        pytest.skip("no Go program in the payload (go is missing on the host: Debian's golang-go)")
    s = BoardScenario(arm64, "ftrace_goroutines", str(ROUNDS), program=program, options=("--debug",))
    define = s.define("ftrace *main.work", "actions", "collect $regs, main.total", "end",  # (its entry)
                      "ftrace runtime.clone", "actions", "collect $regs", "end")
    walk = s.walk("$x0", "$x1", "$sp", "$pc", "$tpidr")
    on_board = f"/tmp/{s.server.name}-go.tf"
    r = s.gdb("break main.main", "continue", "delete", define, "tstart", "disable 3", "monitor tracepoints",
              "break main.finished", "continue", "tstop", "tstatus", "monitor tracepoints",
              "set language c", walk, f"tsave -r {on_board}", "tfind none", "delete", "continue")
    # runtime.clone runs on in the new thread before x28 is its goroutine: a trap, not a pad.
    assert re.fullmatch(r"Fast tracepoint 3 at 0x[0-9a-f]+ is collected through a trap \(trap speed\): "
                        r"the Go runtime's code at 0x[0-9a-f]+ runs before x28 is the thread's goroutine.*",
                        r.of("tstart").strip()), r.of("tstart")
    assert "jumps to its pad" in r.of("monitor tracepoints"), r.of("monitor tracepoints")
    r.trace_stopped("by a tstop command", GOROUTINES * ROUNDS)
    rows = [row[2:] for row in parse_frames(r.of(walk))]
    calls = sorted((k, n) for n, k, *_ in rows)
    assert calls == [(k, n) for k in range(GOROUTINES) for n in range(ROUNDS)], r.of(walk)
    assert len({pc for *_, pc, _ in rows}) == 1, r.of(walk)
    # sp is the goroutine's, outside the pool of agent stacks the pads ran on, and tpidr_el0
    # the program's (the pad's own use of it hidden).
    pool = s.server.wait_for(r"agent stacks: (\d+) of (\d+) KiB at 0x([0-9a-f]+)")
    start = int(pool.group(3), 16)
    end = start + 4096 + int(pool.group(1)) * (int(pool.group(2)) << 10)
    assert all(not start <= sp < end for _, _, sp, *_ in rows), (hex(start), r.of(walk))
    assert {tpidr for *_, tpidr in rows} == {0}, r.of(walk)
    used = re.search(r"agent stacks \(a Go program\): (\d+) of (\d+) taken", r.of("monitor tracepoints", 1))
    assert used and int(used.group(1)) >= 2, r.of("monitor tracepoints", 1)  # (4 threads)
    assert "not collected" not in r.of("monitor tracepoints", 1)
    s.ends_as_natively(r.of("continue", 2))

    saved = arm64.board.fetch_file(on_board, arm64.tmp / "go.tf")
    t = s.gdb("set language c", f"target tfile {saved}", walk, connect=False)
    assert [row[2:] for row in parse_frames(t.of(walk))] == rows, t.of(walk)
