"""More fast tracepoints (ftrace): a thread stopped inside the bytes the jump replaces,
enabling, disabling and adding them during a run, a full linear buffer, fast and trap
tracepoints together, two fast tracepoints at one address, repeated tstart/tstop with
threads, disconnected tracing, and frames reaching the server while the trace runs.

The programs are built and started as in test_ftrace.py (scenario.FastTrace: gdbserver
runs non-PIE programs with libinproctrace.so).
programs/ftrace_phases.c: PHASES phases of CALLS calls of step(n, phase), phase_done(phase)
after each; programs/ftrace_rounds.c: rounds of two threads calling work(id, n).
"""

import re

import pytest

from harness import assert_in_order, hex_value
from scenario import (
    TO_MAIN,
    TO_THE_END,
    FastTrace,
    dumped_bytes,
    examined_bytes,
    ftrace,
    trace,
    trace_to,
    tracepoint_address,
)

PHASES = "ftrace_phases"
ROUNDS = "ftrace_rounds"
LOOP = "ftrace_loop"


# --------------------------------------------------------------------------- 1. a thread inside the replaced bytes


@pytest.mark.tpagent_only(
    "gdb refuses ftrace on an instruction shorter than the 5-byte jump, so the fast tracepoint"
    " is sent as raw packets; gdbserver relocates only one instruction, through gdb's qRelocInsn"
)
@pytest.mark.parametrize("inside", [1, 2], ids=["second-instruction", "third-instruction"])
def test_thread_stopped_inside_the_replaced_bytes(e2e, inside):
    """A fast tracepoint at step's first instruction, push %rbp (1 byte): its jump replaces
    it and the next one or two. gdb stops the program on the second (or third) instruction
    of step's first call, then the trace starts, writing the jump over that thread's
    instruction: the thread must go on from the pad's copy of it. The program then ends
    with its own checksum, and every later call is a frame."""
    calls = 6
    s = FastTrace(e2e, PHASES, "1", str(calls))
    # The entry's instructions, from the file (non-PIE: the addresses are the run's).
    listing = s.gdb("x/4i step", connect=False).of("x/4i step")
    offsets = [int(o or 0) for o in re.findall(r"^\s*0x[0-9a-f]+ <step(?:\+(\d+))?>:", listing, re.M)]
    assert len(offsets) == 4 and offsets[0] == 0, listing
    assert offsets[1] < 5, f"step's first instruction is 5 bytes or more:\n{listing}"
    if offsets[inside] >= 5:
        pytest.skip(f"instruction {inside + 1} of step is not inside the jump:\n{listing}")
    stop_at = f"*step+{offsets[inside]}"
    # Covered span: the whole instructions under the 5 bytes.
    covered = next(o for o in offsets if o >= 5)

    # Fast tracepoint 1 at step (F: the first instruction's length, as gdb would send),
    # collecting the general registers (rax..r15, rip, eflags: mask 0x3ffff) and `last`.
    sent = (
        "maint packet QTinit",
        f'eval "maint packet QTDP:1:%lx:E:0:0:F{offsets[1]:x}-", &step',
        'eval "maint packet QTDP:-1:%lx:R3ffff-", &step',
        'eval "maint packet QTDP:-1:%lx:M-1,%lx,8", &step, &last',
        "maint packet QTStart",
    )
    walk = s.walk("$rdi", "$rsi", "$rip", "last")
    r = s.gdb(
        *TO_MAIN, f"break {stop_at}", "continue", "print $rdi", "delete",
        *sent, "maint flush register-cache", "print/x $pc",
        "break finished", "continue", "maint packet QTStop", "tstatus", walk, *TO_THE_END,
    )
    r.stopped_at(1, r"^Breakpoint 2, 0x[0-9a-f]+ in step \(")
    assert r.value("print $rdi") == "0"  # step(0, 0), the first call
    assert r.replies(*sent) == ["OK"] * len(sent), r.replies(*sent)
    step = hex_value(r.of(f"break {stop_at}"), r"Breakpoint 2 at 0x([0-9a-f]+)") - offsets[inside]
    # The thread left the replaced bytes (for the pad's copy of its instruction).
    pc = hex_value(r.of("print/x $pc"), r"= 0x([0-9a-f]+)")
    assert not step <= pc < step + covered, (hex(pc), hex(step))
    r.stopped_at(2, r"Breakpoint 3, finished \(\)")
    assert r.status().collected == calls - 1, r.status()
    # Calls 1..5: step(n, 0) at its first instruction, after step(n - 1).
    expected = [(k, 1, n, 0, step, n - 1) for k, n in enumerate(range(1, calls))]
    assert r.frames(walk) == expected, r.of(walk)
    s.ends_as_natively(r.of("continue", 3))


@pytest.mark.tpagent_only("gdbserver's 5-byte minimum: gdb refuses ftrace at step's first instruction")
def test_overlapping_jumps_give_way_to_a_trap(e2e):
    """Fast tracepoints at step's first and second instructions: the first one's jump would
    cover the second. Jumps never overlap: the second keeps its jump, the first is collected
    through a trap (tstart says so), both collect every call, and the program runs as
    natively."""
    calls = 3
    s = FastTrace(e2e, PHASES, "1", str(calls))
    s.quiet_tstart = False
    listing = s.gdb("x/2i step", connect=False).of("x/2i step")
    second = [int(o or 0) for o in re.findall(r"^\s*0x[0-9a-f]+ <step(?:\+(\d+))?>:", listing, re.M)][1]
    assert second < 5, f"step's first instruction is 5 bytes or more:\n{listing}"
    define = s.define(ftrace("*step"), ftrace(f"*(char *)step + {second}"))
    r = s.gdb(*TO_MAIN, define, "break finished", "tstart", "monitor tracepoints", "continue", "tstop",
              "tstatus", *TO_THE_END)
    assert re.search(r"^Fast tracepoint 2 at 0x[0-9a-f]+ is collected through a trap \(trap speed\): "
                     r"tracepoint 3 at 0x[0-9a-f]+ is inside its jump\.$", r.of("tstart"), re.M), r.of("tstart")
    assert re.search(r"^Fast tracepoint 3 at 0x[0-9a-f]+ jumps to its pad", r.of("monitor tracepoints"), re.M), \
        r.of("monitor tracepoints")
    r.trace_stopped("by a tstop command", 2 * calls)
    s.ends_as_natively(r.of("continue", 2))


# --------------------------------------------------------------------------- 2. disable and enable while tracing


def test_disable_and_enable_during_the_run(e2e):
    """disable/enable on a fast tracepoint while the trace runs (QTDisable, QTEnable), at
    stops between the phases: phases 0 and 2 run enabled, 1 and 3 disabled, and only the
    enabled phases' calls are frames."""
    calls = 5
    s = FastTrace(e2e, PHASES, "4", str(calls))
    define = s.define(ftrace(s.at("step_body"), "collect n, p, hits"))
    walk = s.walk("n", "p", "hits")
    r = s.gdb(
        *TO_MAIN, define, "break phase_done", "tstart",
        "continue",  # phase 0, enabled
        "disable 2", "info tracepoints 2",
        "continue",  # phase 1, disabled
        "enable 2",
        "continue",  # phase 2, enabled
        "disable 2",
        "continue",  # phase 3, disabled
        "tstop", "tstatus", walk, *TO_THE_END,
    )
    for k in range(4):
        r.stopped_at(1 + k, rf"Breakpoint 3, phase_done \(p={k}\)")
    assert_in_order(r.of("info tracepoints 2"), r"^2\s+fast tracepoint\s+keep n\s+0x[0-9a-f]+ in step at ")
    assert r.status().collected == 2 * calls, r.status()
    # n = phase * 1000 + call; hits counts every call, traced or not.
    expected = [
        (k, 2, p * 1000 + i, p, p * calls + i) for k, (p, i) in enumerate((p, i) for p in (0, 2) for i in range(calls))
    ]
    assert r.frames(walk) == expected, r.of(walk)
    s.ends_as_natively(r.of("continue", 5))


@pytest.mark.tpagent_only(
    "gdbserver's in-process agent makes two frames at every hit of a fast tracepoint added"
    " during the run at an address that has one"
)
def test_fast_tracepoints_added_during_the_run(e2e):
    """ftrace during a run (InstallInTrace): a new address gets its jump at once, and a second
    tracepoint at an address that has one joins it. From the next phase on, every call makes
    a frame for each, in the order of the hits, with each one's own data; tpagent's are fast
    frames (the registers the pad saves: no $xmm0, which a trap site's frame would hold)."""
    calls = 3
    s = FastTrace(e2e, PHASES, "3", str(calls))
    step_body, tally_body = s.at("step_body"), s.at("tally_body")
    define = s.define(ftrace(step_body, "collect n, p"))
    order = s.walk()
    tally, second = s.walk("hits", "tallies", tracepoint=4), s.walk("hits", "tallies", tracepoint=5)
    r = s.gdb(
        *TO_MAIN, define, "break phase_done", "tstart",
        "continue",  # phase 0: tracepoint 2 only
        "set default-collect hits, tallies, $regs", f"ftrace {tally_body}", f"ftrace {step_body}",
        "info tracepoints",
        "continue",  # phase 1: 2, 5 and 4 at every call
        "continue",  # phase 2
        "tstop", "tstatus", order, tally, second,
        "tfind tracepoint 4", "print $pc", "print $xmm0.uint128", *TO_THE_END,
    )
    assert_in_order(
        r.of("info tracepoints"),
        r"^4\s+fast tracepoint\s+keep y\s+0x[0-9a-f]+ in tally at ",
        r"^5\s+fast tracepoint\s+keep y\s+0x[0-9a-f]+ in step at ",
    )
    for k in range(3):
        r.stopped_at(1 + k, rf"Breakpoint 3, phase_done \(p={k}\)")
    assert r.status().collected == calls + 2 * 3 * calls, r.status()
    assert [row[1] for row in r.frames(order)] == [2] * calls + [2, 5, 4] * 2 * calls, r.of(order)
    later = range(calls, 3 * calls)  # the calls of phases 1 and 2, counted from 0
    assert [row[2:] for row in r.frames(tally)] == [(c + 1, c) for c in later], r.of(tally)
    assert [row[2:] for row in r.frames(second)] == [(c, c) for c in later], r.of(second)
    address = tracepoint_address(r.of(f"ftrace {tally_body}"), 4, fast=True, source=PHASES)
    assert hex_value(r.of("print $pc"), r"0x([0-9a-f]+)") == address, r.of("print $pc")
    if not e2e.is_gdbserver:
        assert r.value("print $xmm0.uint128") == "<unavailable>", r.of("print $xmm0.uint128")
    s.ends_as_natively(r.of("continue", 4))


# --------------------------------------------------------------------------- 3. a full linear buffer


@pytest.mark.tpagent_only(
    "gdbserver's in-process agent does not stop at set trace-buffer-size: 40 frames of 4 KiB in a 64 KiB"
    " buffer, tstatus still running"
)
def test_linear_buffer_fills(e2e):
    """A 64 KiB linear trace buffer and a fast tracepoint collecting a 4 KiB array at each
    of 40 calls: the buffer fills, the trace stops itself, the frames it has are the first
    calls', whole, and the program, untraced from then on, still gets its checksum."""
    s = FastTrace(e2e, PHASES, "4", "10")
    define = s.define(ftrace(s.at("step_body"), "collect n, hits, big"))
    walk = s.walk("n", "hits", "big[0]", "big[4095]")
    r = s.gdb(
        *TO_MAIN, define, "set trace-buffer-size 65536", "set circular-trace-buffer off",
        *trace_to("finished", tstop=False), walk, *TO_THE_END,
    )
    r.stopped_at(1, r"Breakpoint 3, finished \(\)")
    status = r.status()
    assert status.stopped == "because the buffer was full", status
    frames = status.collected
    # Each frame holds the 4 KiB array: at most 16 fit, and the buffer took at least a few.
    assert 4 <= frames < 16, status
    calls = [p * 1000 + i for p in range(4) for i in range(10)]
    # Frame k: call k, at step's body, with big as call k - 1 left it.
    expected = [
        (k, 2, n, k, (calls[k - 1] if k else 0) & 0xFF, ((calls[k - 1] + 4095) & 0xFF) if k else 0)
        for k, n in enumerate(calls[:frames])
    ]
    assert r.frames(walk) == expected, r.of(walk)
    s.ends_as_natively(r.of("continue", 2))


# --------------------------------------------------------------------------- 4. fast and trap tracepoints together


ITERATIONS = 6


def run_fast_and_trap(e2e) -> dict[int, list[tuple[int, ...]]]:
    """Three fast tracepoints at three places (step's first line, step's line after the copy
    into big, tally's body) and a trap tracepoint in mix(), which step calls between the
    first two, over 6 calls of step(i, 0): each one's frames as tfind tracepoint N finds
    them. (No leaf function with locals: gdbserver's pad overwrites the red zone.)"""
    s = FastTrace(e2e, PHASES, "1", str(ITERATIONS))
    define = s.define(
        ftrace(s.at("step_body"), "collect n, hits"),
        ftrace(s.at("step_late"), "collect n, late, big[7]"),
        ftrace(s.at("tally_body"), "collect tallies"),
        trace("mix", "collect v, hits"),
    )
    walks = {
        2: s.walk("n", "hits", tracepoint=2),
        3: s.walk("n", "late", "big[7]", tracepoint=3),
        4: s.walk("tallies", tracepoint=4),
        5: s.walk("v", "hits", tracepoint=5),
    }
    r = s.gdb(*TO_MAIN, define, "info tracepoints", *trace_to("finished"), *walks.values(), *TO_THE_END)
    assert_in_order(
        r.of("info tracepoints"),
        r"^2\s+fast tracepoint\s+keep y\s+0x[0-9a-f]+ in step at ",
        r"^3\s+fast tracepoint\s+keep y\s+0x[0-9a-f]+ in step at ",
        r"^4\s+fast tracepoint\s+keep y\s+0x[0-9a-f]+ in tally at ",
        r"^5\s+tracepoint\s+keep y\s+0x[0-9a-f]+ in mix at ",
    )
    r.stopped_at(1, r"Breakpoint 6, finished \(\)")
    assert r.status().collected == 4 * ITERATIONS, r.status()
    s.ends_as_natively(r.of("continue", 2))
    return {tp: r.frames(walk) for tp, walk in walks.items()}


def test_fast_and_trap_tracepoints_together(e2e):
    """Every hit of each of the four makes one frame with that tracepoint's own data, and
    tfind tracepoint N finds them, each tracepoint's in the order of its hits."""
    rows = run_fast_and_trap(e2e)
    numbers = {tp: [row[0] for row in found] for tp, found in rows.items()}
    assert all(n == sorted(n) for n in numbers.values()), numbers
    assert sorted(sum(numbers.values(), [])) == list(range(4 * ITERATIONS)), numbers
    values = {tp: [row[2:] for row in found] for tp, found in rows.items()}
    assert [row[1] for found in rows.values() for row in found] == [tp for tp in rows for _ in rows[tp]]
    assert values[2] == [(i, i) for i in range(ITERATIONS)], rows
    assert values[3] == [(i, i, i + 7) for i in range(ITERATIONS)], rows
    assert values[4] == [(i,) for i in range(ITERATIONS)], rows
    # mix(n * 7 + p), called by step(i, 0) after its first line.
    assert values[5] == [(7 * i, i + 1) for i in range(ITERATIONS)], rows


def test_fast_and_trap_frames_in_the_order_of_the_hits(e2e):
    """Frames are numbered in the order they were collected: each call is step's first line
    (2), mix (5, trap), step's late line (3), tally (4), in one thread, one after another."""
    rows = run_fast_and_trap(e2e)
    numbers = {tp: [row[0] for row in found] for tp, found in rows.items()}
    assert numbers == {
        2: [4 * i for i in range(ITERATIONS)],
        5: [4 * i + 1 for i in range(ITERATIONS)],
        3: [4 * i + 2 for i in range(ITERATIONS)],
        4: [4 * i + 3 for i in range(ITERATIONS)],
    }, numbers


# --------------------------------------------------------------------------- 5. two fast tracepoints at one address


def test_two_fast_tracepoints_at_one_address(e2e):
    """Two ftrace at the same line, collecting different things: each hit makes a frame
    for each, each with its own tracepoint's data only."""
    iterations = 5
    s = FastTrace(e2e, LOOP, str(iterations))
    entry = s.at("traced_entry")
    define = s.define(ftrace(entry, "collect n"), ftrace(entry, "collect hits, current"))
    first, second = s.walk("n", tracepoint=2), s.walk("hits", "current.id", tracepoint=3)
    r = s.gdb(
        *TO_MAIN, define, *trace_to("finished"), first, second,
        "tfind tracepoint 2", "print hits", "tfind tracepoint 3", "print n", *TO_THE_END,
    )
    tp = tracepoint_address(r.of(define), 2, fast=True, source=LOOP)
    assert tracepoint_address(r.of(define), 3, fast=True, source=LOOP) == tp
    assert r.status().collected == 2 * iterations, r.status()
    a, b = r.frames(first), r.frames(second)
    assert [row[2:] for row in a] == [(i,) for i in range(iterations)], r.of(first)
    assert [row[2:] for row in b] == [(i, max(i - 1, 0)) for i in range(iterations)], r.of(second)
    # The two frames of one hit are next to each other.
    assert sorted(row[0] for row in a + b) == list(range(2 * iterations))
    assert all(abs(x[0] - y[0]) == 1 for x, y in zip(a, b)), (a, b)
    # Neither tracepoint collected the other's data.
    assert r.value("print hits") == "<unavailable>"
    assert re.search(r"No symbol|<unavailable>", r.of("print n")), r.of("print n")
    s.exits_as_natively(r.of("continue", 2))


# --------------------------------------------------------------------------- 6. tstart, tstop, again and again


def test_repeated_runs_with_threads(e2e):
    """Five traces in one session, one per round of ftrace_rounds: tstart, two threads call
    work() 20 times each, the program stops at round_done, tstop. Each trace holds that
    round's 40 calls, no more; afterwards the code is as it was before the first tstart and
    the program ends with its own sums.

    The code is read through the server (x/8xb) and, by a shell command, straight from
    /proc/PID/mem, which shows the jump while each trace runs (test_ftrace.py does the same)."""
    rounds, calls = 5, 20
    s = FastTrace(e2e, ROUNDS)
    define = s.define(ftrace(s.at("work_entry"), "collect id, n"))
    walk = s.walk("id", "n")
    where = "info tracepoints 2"  # leaves the tracepoint's address in $_
    direct = s.read_code("$_")
    one_round = ("tstart", "continue", where, direct, "tstop", "tstatus", walk)
    r = s.gdb(
        *TO_MAIN, define, "break round_done", where, direct, "x/8xb $_",
        *(one_round * rounds),
        where, direct, "x/8xb $_", "delete", "continue",
    )
    tp = tracepoint_address(r.of(define), 2, fast=True, source=ROUNDS)
    before = dumped_bytes(r.of(direct, 0))
    assert before[:2] == [0x8B, 0x05], before  # mov 0x...(%rip),%eax: see ftrace_rounds.c
    for k in range(rounds):
        r.stopped_at(1 + k, rf"Breakpoint 3, round_done \(r={k}\)")
        during = dumped_bytes(r.of(direct, 1 + k))
        # jmp rel32 to the pad over the 6-byte instruction; what follows it untouched.
        assert during[0] == 0xE9 and during[6:] == before[6:], (k, before, during)
        r.trace_stopped("by a tstop command", 2 * calls, nth=k)
        rows = r.frames(walk, k)
        assert [row[0] for row in rows] == list(range(2 * calls)), r.of(walk, k)
        for thread in range(2):
            ns = [n for _, _, t, n in rows if t == thread]
            assert ns == [100 * k + c for c in range(calls)], (k, thread, r.of(walk, k))
    assert dumped_bytes(r.of(direct, 1 + rounds)) == before
    through_server = r.of("x/8xb $_", 0), r.of("x/8xb $_", 1)
    assert through_server[0].startswith(f"0x{tp:x} <work+"), through_server
    assert examined_bytes(through_server[0]) == before, (through_server, before)
    assert through_server[1] == through_server[0]
    s.ends_as_natively(r.of("continue", 1 + rounds))


# --------------------------------------------------------------------------- 7. disconnected tracing


def test_disconnected_tracing(e2e):
    """disconnected-tracing on: gdb starts the trace and detaches; the program calls step()
    every 10 ms with no gdb at all; a second gdb finds the trace running with the fast
    tracepoint, stops it and reads the frames made while no gdb was there."""
    stop_file = e2e.tmp / "stop"
    # No phases: step(i, 0) every 10 ms until stop_file exists.
    s = FastTrace(e2e, PHASES, "0", "1", str(stop_file))
    define = s.define(ftrace(s.at("step_body"), "collect n, hits"))
    first = s.gdb(*TO_MAIN, define, "set disconnected-tracing on", "tstart", "print hits", "detach")
    assert first.value("print hits") == "0"  # no call made while gdb was there
    assert_in_order(first.of("detach"), rf"^\[Inferior 1 \(process {s.pid}\) detached\]$")

    s.server.wait_for(r"^tick 40$")
    r = s.gdb(
        "tstatus", "info tracepoints", "tstop", "tstatus",
        "tfind 30", "print n", "print hits", "tfind none", f"shell touch {stop_file}", "continue",
    )
    assert_in_order(
        r.of(s.connect),
        r"^Trace is already running on the target\.$",
        r"^Created tracepoint 1 for target's tracepoint 2 at 0x[0-9a-f]+\.$",
    )
    running = r.status()
    assert running.running and running.on_disconnect == "continue", running
    assert running.collected >= 40, running
    assert_in_order(
        r.of("info tracepoints"),
        r"^1\s+fast tracepoint\s+keep y\s+0x[0-9a-f]+ in step at .*ftrace_phases\.c:\d+$",
        r"^\s+collect n, hits$",
        r"^\s+installed on target$",
    )
    stopped = r.status(1)
    assert stopped.stopped == "by a tstop command" and stopped.collected >= running.collected, stopped
    assert r.found("tfind 30") == (30, 1)
    assert r.value("print n") == "30"
    assert r.value("print hits") == "30"
    # The program, traced no more, runs to its end: its count of calls is its own.
    done = assert_in_order(r.of("continue"), rf"^\[Inferior 1 \(process {s.pid}\) exited ")[0]
    hits = int(s.server.wait_for(r"^checksum=\d+ hits=(\d+)$").group(1))
    assert hits >= stopped.collected, (hits, done)


# --------------------------------------------------------------------------- 8. frames reach the server while tracing


def test_frame_count_grows_while_running(e2e):
    """tstatus at each stop between phases, the trace still running: the frame count is
    each time all the calls made so far (the frames reached the server without a tstop)."""
    calls = 5
    s = FastTrace(e2e, PHASES, "4", str(calls))
    define = s.define(ftrace(s.at("step_body"), "collect n"))
    r = s.gdb(
        *TO_MAIN, define, "break phase_done", "tstart",
        *("continue", "tstatus") * 3,
        "tstop", "tfind 14", "print n", "tfind", *TO_THE_END,
    )
    for k in range(3):
        r.stopped_at(1 + k, rf"Breakpoint 3, phase_done \(p={k}\)")
        assert (r.status(k).running, r.status(k).collected) == (True, calls * (k + 1)), r.status(k)
    assert r.found("tfind 14") == (14, 2)
    assert r.value("print n") == "2004"
    assert r.found("tfind") is None
    s.exits_as_natively(r.of("continue", 4))


# --------------------------------------------------------------------------- thread-pointer registers


@pytest.mark.tpagent_only("gdbserver's fast frames leave fs_base and gs_base unavailable")
def test_fast_frames_hold_each_threads_thread_pointer(e2e):
    """Four threads hit a fast tracepoint collecting $regs: every frame holds the fs_base of
    the thread that hit it (glibc's pthread_self()), so thread-local variables resolve under
    tfind; gs_base too. tsave -r writes them into the trace file where gdb reads them back."""
    threads, rounds = 4, 5
    s = FastTrace(e2e, "ftrace_tls")
    define = s.define(ftrace("work", "collect $regs"))
    walk = s.walk("$rdi", "$rsi", "$fs_base", "$gs_base")
    saved = e2e.tmp / "target.tf"
    r = s.gdb(
        *TO_MAIN, "print/x $gs_base", define, *trace_to("all_done"), "print/x self_of", walk,
        f"tsave -r {saved}",
    )
    r.trace_stopped("by a tstop command", threads * rounds)
    selves = [int(v, 16) for v in re.findall(r"0x[0-9a-f]+", r.value("print/x self_of"))]
    assert len(selves) == threads and len(set(selves)) == threads and 0 not in selves, selves
    gs = int(r.value("print/x $gs_base"), 16)
    rows = r.frames(walk)
    assert len(rows) == threads * rounds, r.of(walk)
    assert all(fs == selves[tid] and g == gs for _, _, tid, _, fs, g in rows), (selves, rows)
    assert sorted(row[2:4] for row in rows) == [(t, n) for t in range(threads) for n in range(rounds)]

    # The file's tracepoint is gdb's number 1 (it numbers them afresh); the rest is the same.
    read_back = s.open_trace_file(saved, walk)
    assert [(f, *v) for f, _, *v in read_back.frames(walk)] == [(f, *v) for f, _, *v in rows]


# --------------------------------------------------------------------------- every register of a fast frame

# What the jump pad leaves for the collector to fill in (the pc, the stack pointer, the flags,
# the segment selectors), then registers the pad stores itself.
SHOWN_REGISTERS = "rip rsp eflags cs ss ds es fs gs fs_base gs_base rbp rdi rsi"


@pytest.mark.tpagent_only("gdbserver's fast frames leave fs_base and gs_base unavailable")
def test_fast_frame_registers_are_the_trap_frames(e2e):
    """collect $regs at step's first line, through a trap tracepoint in phase 0, then through
    a fast one in phase 1: the first call of each phase comes from the same place in main
    with the same stack, so `info registers` shows the same pc, stack pointer, flags,
    segment selectors, thread pointer and frame pointer in both frames (the arguments n and
    the phase differ by a phase), as the live thread has them."""
    s = FastTrace(e2e, PHASES, "2", "3")
    at = s.at("step_body")
    show = f"info registers {SHOWN_REGISTERS}"
    r = s.gdb(
        *TO_MAIN, f"break {at}", "continue", show, "delete",
        s.define(trace(at, "collect $regs")), "break phase_done", "tstart", "continue", "tstop",
        "tfind 0", show, "tfind none", "delete",
        s.define(ftrace(at, "collect $regs")), "break phase_done", "tstart", "continue", "tstop",
        "tfind 0", show, *TO_THE_END,
    )

    def registers(nth: int) -> dict[str, str]:
        return dict(re.findall(r"^(\w+)\s+(0x[0-9a-f]+)", r.of(show, nth), re.M))

    live, trap, fast = registers(0), registers(1), registers(2)
    assert set(live) == set(SHOWN_REGISTERS.split()), r.of(show, 0)
    assert trap == live, (trap, live)
    arguments = ("rdi", "rsi")
    assert {k: v for k, v in fast.items() if k not in arguments} == {
        k: v for k, v in trap.items() if k not in arguments
    }, (fast, trap)
    assert int(fast["rdi"], 16) == int(trap["rdi"], 16) + 1000, (fast, trap)  # n
    assert int(fast["rsi"], 16) == int(trap["rsi"], 16) + 1, (fast, trap)  # the phase
    s.ends_as_natively(r.of("continue", 4))


@pytest.mark.tpagent_only("the buffer shared with tpagent's in-process agent")
def test_the_buffer_is_mapped_into_the_program_at_tstart(e2e):
    """At tstart tpagent has the stopped program map the run's trace buffer (the memfd it
    shares with the in-process agent) into its page tables, so that no collecting thread
    faults or maps it later: right after tstart, before any hit, the mapping's resident size
    in the program's /proc/PID/smaps holds the whole 4 MiB buffer."""
    s = FastTrace(e2e, PHASES, "1", "3")
    rss = (
        f"shell awk '/tpagent-inproc/ {{m = 1}} m && /^Rss:/ {{print \"rss\", $2; m = 0}}' "
        f"/proc/{s.pid}/smaps"
    )
    r = s.gdb(
        *TO_MAIN, "set trace-buffer-size 4194304", rss,
        s.define(ftrace(s.at("step_body"), "collect n")), "tstart", rss, "tstop", *TO_THE_END,
    )
    before = int(re.search(r"^rss (\d+)$", r.of(rss, 0), re.M).group(1))
    after = int(re.search(r"^rss (\d+)$", r.of(rss, 1), re.M).group(1))
    assert after >= 4096 > before, (before, after)  # kB
    s.ends_as_natively(r.of("continue", 1))
