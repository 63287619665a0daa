"""More fast tracepoints (ftrace): a thread stopped inside the bytes the jump replaces,
enabling and disabling during a run, a full linear buffer, fast and trap tracepoints
together, two fast tracepoints at one address, repeated tstart/tstop with threads,
disconnected tracing, and frames reaching the server while the trace runs.

The program builder, the agent library's preloading and the output helpers are
test_ftrace.py's (see there: gdbserver runs non-PIE programs with libinproctrace.so).
programs/ftrace_phases.c: PHASES phases of CALLS calls of step(n, phase), phase_done(phase)
after each; programs/ftrace_rounds.c: rounds of two threads calling work(id, n).
"""

import re

import pytest

from harness import assert_in_order, hex_value, printed_value
from test_ftrace import (
    TO_MAIN,
    builds,  # noqa: F401 (the module's program builder fixture)
    exited_with,
    fast_tracepoint_address,
    frames_of,
    gdb_tracing,
    native_run,
    serve_with_agent,
    walk_frames,
)

PHASES = "ftrace_phases"
ROUNDS = "ftrace_rounds"
LOOP = "ftrace_loop"


def tracepoint_frames(e2e, number: int, *expressions: str) -> str:
    """A command printing "frame N tp T: e1 e2 ..." for every frame of tracepoint NUMBER,
    found with tfind tracepoint from no frame selected."""
    values = " ".join("%ld" for _ in expressions)
    args = "".join(f", {e}" for e in expressions)
    return e2e.command_file(
        "tfind none",
        f"tfind tracepoint {number}",
        "while $trace_frame != -1",
        f'  printf "frame %d tp %d: {values}\\n", $trace_frame, $tracepoint{args}',
        f"  tfind tracepoint {number}",
        "end",
    )


def collected(text: str) -> int:
    return int(assert_in_order(text, r"^Collected (\d+) trace frames\.$")[0].group(1))


# --------------------------------------------------------------------------- 1. a thread inside the replaced bytes


@pytest.mark.tpagent_only(
    "gdb refuses ftrace on an instruction shorter than the 5-byte jump, so the fast tracepoint"
    " is sent as raw packets; gdbserver relocates only one instruction, through gdb's qRelocInsn"
)
@pytest.mark.parametrize("inside", [1, 2], ids=["second-instruction", "third-instruction"])
def test_thread_stopped_inside_the_replaced_bytes(e2e, builds, inside):
    """A fast tracepoint at step's first instruction, push %rbp (1 byte): its jump replaces
    it and the next one or two. gdb stops the program on the second (or third) instruction
    of step's first call, then the trace starts, writing the jump over that thread's
    instruction: the thread must go on from the pad's copy of it. The program then ends
    with its own checksum, and every later call is a frame."""
    program = builds.path(PHASES)
    calls = 6
    reference = native_run(program, "1", str(calls))
    # The entry's instructions, from the file (non-PIE: the addresses are the run's).
    listing = e2e.gdb("x/4i step", program=program).of("x/4i step")
    offsets = [int(o or 0) for o in re.findall(r"^\s*0x[0-9a-f]+ <step(?:\+(\d+))?>:", listing, re.M)]
    assert len(offsets) == 4 and offsets[0] == 0, listing
    assert offsets[1] < 5, f"step's first instruction is 5 bytes or more:\n{listing}"
    if offsets[inside] >= 5:
        pytest.skip(f"instruction {inside + 1} of step is not inside the jump:\n{listing}")
    stop_at = f"*step+{offsets[inside]}"
    # Covered span: the whole instructions under the 5 bytes.
    covered = next(o for o in offsets if o >= 5)

    server = serve_with_agent(e2e, program, "1", str(calls))
    # Fast tracepoint 1 at step (F: the first instruction's length, as gdb would send),
    # collecting the general registers (rax..r15, rip, eflags: mask 0x3ffff) and `last`.
    sent = (
        "maint packet QTinit",
        f'eval "maint packet QTDP:1:%lx:E:0:0:F{offsets[1]:x}-", &step',
        'eval "maint packet QTDP:-1:%lx:R3ffff-", &step',
        'eval "maint packet QTDP:-1:%lx:M-1,%lx,8", &step, &last',
        "maint packet QTStart",
    )
    walk = walk_frames(e2e, "$rdi", "$rsi", "$rip", "last")
    r = e2e.gdb(
        server.remote,
        *TO_MAIN,
        f"break {stop_at}",
        "continue",
        "print $rdi",
        "delete",
        *sent,
        "maint flush register-cache",
        "print/x $pc",
        "break finished",
        "continue",
        "maint packet QTStop",
        "tstatus",
        walk,
        "tfind none",
        "delete",
        "continue",
        program=program,
    )
    assert_in_order(r.of("continue", 1), rf"^Breakpoint 2, 0x[0-9a-f]+ in step \(")
    assert printed_value(r.of("print $rdi")) == "0"  # step(0, 0), the first call
    replies = [re.search(r'received: "(.*)"', r.of(command)).group(1) for command in sent]
    assert replies == ["OK"] * len(sent), replies
    step = hex_value(r.of(f"break {stop_at}"), r"Breakpoint 2 at 0x([0-9a-f]+)") - offsets[inside]
    # The thread left the replaced bytes (for the pad's copy of its instruction).
    pc = hex_value(r.of("print/x $pc"), r"= 0x([0-9a-f]+)")
    assert not step <= pc < step + covered, (hex(pc), hex(step))
    assert_in_order(r.of("continue", 2), r"Breakpoint 3, finished \(\)")
    assert_in_order(r.of("tstatus"), rf"^Collected {calls - 1} trace frames\.$")
    # Calls 1..5: step(n, 0) at its first instruction, after step(n - 1).
    expected = [(k, 1, n, 0, step, n - 1) for k, n in enumerate(range(1, calls))]
    assert frames_of(r.of(walk)) == expected, r.of(walk)
    exited_with(r.of("continue", 3), server.inferior_pid, reference.returncode)
    server.wait_for(rf"^{re.escape(reference.stdout.strip())}$")


# --------------------------------------------------------------------------- 2. disable and enable while tracing


def test_disable_and_enable_during_the_run(e2e, builds):
    """disable/enable on a fast tracepoint while the trace runs (QTDisable, QTEnable), at
    stops between the phases: phases 0 and 2 run enabled, 1 and 3 disabled, and only the
    enabled phases' calls are frames."""
    program = builds.path(PHASES)
    calls = 5
    reference = native_run(program, "4", str(calls))
    server = serve_with_agent(e2e, program, "4", str(calls))
    body = e2e.line(PHASES, "step_body")
    define = e2e.command_file(f"ftrace {PHASES}.c:{body}", "actions", "collect n, p, hits", "end")
    walk = walk_frames(e2e, "n", "p", "hits")
    r = gdb_tracing(
        e2e,
        server.remote,
        *TO_MAIN,
        define,
        "break phase_done",
        "tstart",
        "continue",  # phase 0, enabled
        "disable 2",
        "info tracepoints 2",
        "continue",  # phase 1, disabled
        "enable 2",
        "continue",  # phase 2, enabled
        "disable 2",
        "continue",  # phase 3, disabled
        "tstop",
        "tstatus",
        walk,
        "tfind none",
        "delete",
        "continue",
        program=program,
    )
    for k in range(4):
        assert_in_order(r.of("continue", 1 + k), rf"Breakpoint 3, phase_done \(p={k}\)")
    assert_in_order(r.of("info tracepoints 2"), r"^2\s+fast tracepoint\s+keep n\s+0x[0-9a-f]+ in step at ")
    assert_in_order(r.of("tstatus"), rf"^Collected {2 * calls} trace frames\.$")
    # n = phase * 1000 + call; hits counts every call, traced or not.
    expected = [
        (k, 2, p * 1000 + i, p, p * calls + i) for k, (p, i) in enumerate((p, i) for p in (0, 2) for i in range(calls))
    ]
    assert frames_of(r.of(walk)) == expected, r.of(walk)
    exited_with(r.of("continue", 5), server.inferior_pid, reference.returncode)
    server.wait_for(rf"^{re.escape(reference.stdout.strip())}$")


# --------------------------------------------------------------------------- 3. a full linear buffer


@pytest.mark.tpagent_only(
    "gdbserver's in-process agent does not stop at set trace-buffer-size: 40 frames of 4 KiB in a 64 KiB"
    " buffer, tstatus still running"
)
def test_linear_buffer_fills(e2e, builds):
    """A 64 KiB linear trace buffer and a fast tracepoint collecting a 4 KiB array at each
    of 40 calls: the buffer fills, the trace stops itself, the frames it has are the first
    calls', whole, and the program, untraced from then on, still gets its checksum."""
    program = builds.path(PHASES)
    reference = native_run(program, "4", "10")
    server = serve_with_agent(e2e, program, "4", "10")
    body = e2e.line(PHASES, "step_body")
    define = e2e.command_file(f"ftrace {PHASES}.c:{body}", "actions", "collect n, hits, big", "end")
    walk = walk_frames(e2e, "n", "hits", "big[0]", "big[4095]")
    r = gdb_tracing(
        e2e,
        server.remote,
        *TO_MAIN,
        define,
        "set trace-buffer-size 65536",
        "set circular-trace-buffer off",
        "break finished",
        "tstart",
        "continue",
        "tstatus",
        walk,
        "tfind none",
        "delete",
        "continue",
        program=program,
    )
    assert_in_order(r.of("continue", 1), r"Breakpoint 3, finished \(\)")
    assert_in_order(r.of("tstatus"), r"^Trace stopped because the buffer was full\.$")
    frames = collected(r.of("tstatus"))
    # Each frame holds the 4 KiB array: at most 16 fit, and the buffer took at least a few.
    assert 4 <= frames < 16, r.of("tstatus")
    calls = [p * 1000 + i for p in range(4) for i in range(10)]
    # Frame k: call k, at step's body, with big as call k - 1 left it.
    expected = [
        (k, 2, n, k, (calls[k - 1] if k else 0) & 0xFF, ((calls[k - 1] + 4095) & 0xFF) if k else 0)
        for k, n in enumerate(calls[:frames])
    ]
    assert frames_of(r.of(walk)) == expected, r.of(walk)
    exited_with(r.of("continue", 2), server.inferior_pid, reference.returncode)
    server.wait_for(rf"^{re.escape(reference.stdout.strip())}$")


# --------------------------------------------------------------------------- 4. fast and trap tracepoints together


ITERATIONS = 6


def run_fast_and_trap(e2e, builds) -> dict[int, list[tuple[int, ...]]]:
    """Three fast tracepoints at three places (step's first line, step's line after the copy
    into big, tally's body) and a trap tracepoint in mix(), which step calls between the
    first two, over 6 calls of step(i, 0): each one's frames as tfind tracepoint N finds
    them. (No leaf function with locals: gdbserver's pad overwrites the red zone.)"""
    program = builds.path(PHASES)
    args = ("1", str(ITERATIONS))
    reference = native_run(program, *args)
    server = serve_with_agent(e2e, program, *args)
    body, late, tally = (e2e.line(PHASES, m) for m in ("step_body", "step_late", "tally_body"))
    define = e2e.command_file(
        f"ftrace {PHASES}.c:{body}",
        "actions",
        "collect n, hits",
        "end",
        f"ftrace {PHASES}.c:{late}",
        "actions",
        "collect n, late, big[7]",
        "end",
        f"ftrace {PHASES}.c:{tally}",
        "actions",
        "collect tallies",
        "end",
        "trace mix",
        "actions",
        "collect v, hits",
        "end",
    )
    walks = {
        2: tracepoint_frames(e2e, 2, "n", "hits"),
        3: tracepoint_frames(e2e, 3, "n", "late", "big[7]"),
        4: tracepoint_frames(e2e, 4, "tallies"),
        5: tracepoint_frames(e2e, 5, "v", "hits"),
    }
    r = gdb_tracing(
        e2e,
        server.remote,
        *TO_MAIN,
        define,
        "info tracepoints",
        "break finished",
        "tstart",
        "continue",
        "tstop",
        "tstatus",
        *walks.values(),
        "tfind none",
        "delete",
        "continue",
        program=program,
    )
    assert_in_order(
        r.of("info tracepoints"),
        r"^2\s+fast tracepoint\s+keep y\s+0x[0-9a-f]+ in step at ",
        r"^3\s+fast tracepoint\s+keep y\s+0x[0-9a-f]+ in step at ",
        r"^4\s+fast tracepoint\s+keep y\s+0x[0-9a-f]+ in tally at ",
        r"^5\s+tracepoint\s+keep y\s+0x[0-9a-f]+ in mix at ",
    )
    assert_in_order(r.of("continue", 1), r"Breakpoint 6, finished \(\)")
    assert_in_order(r.of("tstatus"), rf"^Collected {4 * ITERATIONS} trace frames\.$")
    exited_with(r.of("continue", 2), server.inferior_pid, reference.returncode)
    server.wait_for(rf"^{re.escape(reference.stdout.strip())}$")
    return {tp: frames_of(r.of(walk)) for tp, walk in walks.items()}


def test_fast_and_trap_tracepoints_together(e2e, builds):
    """Every hit of each of the four makes one frame with that tracepoint's own data, and
    tfind tracepoint N finds them, each tracepoint's in the order of its hits."""
    rows = run_fast_and_trap(e2e, builds)
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


def test_fast_and_trap_frames_in_the_order_of_the_hits(e2e, builds):
    """Frames are numbered in the order they were collected: each call is step's first line
    (2), mix (5, trap), step's late line (3), tally (4), in one thread, one after another."""
    rows = run_fast_and_trap(e2e, builds)
    numbers = {tp: [row[0] for row in found] for tp, found in rows.items()}
    assert numbers == {
        2: [4 * i for i in range(ITERATIONS)],
        5: [4 * i + 1 for i in range(ITERATIONS)],
        3: [4 * i + 2 for i in range(ITERATIONS)],
        4: [4 * i + 3 for i in range(ITERATIONS)],
    }, numbers


# --------------------------------------------------------------------------- 5. two fast tracepoints at one address


def test_two_fast_tracepoints_at_one_address(e2e, builds):
    """Two ftrace at the same line, collecting different things: each hit makes a frame
    for each, each with its own tracepoint's data only."""
    program = builds.path(LOOP)
    iterations = 5
    reference = native_run(program, str(iterations))
    server = serve_with_agent(e2e, program, str(iterations))
    entry = e2e.line(LOOP, "traced_entry")
    define = e2e.command_file(
        f"ftrace {LOOP}.c:{entry}",
        "actions",
        "collect n",
        "end",
        f"ftrace {LOOP}.c:{entry}",
        "actions",
        "collect hits, current",
        "end",
    )
    first, second = tracepoint_frames(e2e, 2, "n"), tracepoint_frames(e2e, 3, "hits", "current.id")
    r = gdb_tracing(
        e2e,
        server.remote,
        *TO_MAIN,
        define,
        "break finished",
        "tstart",
        "continue",
        "tstop",
        "tstatus",
        first,
        second,
        "tfind tracepoint 2",
        "print hits",
        "tfind tracepoint 3",
        "print n",
        "tfind none",
        "delete",
        "continue",
        program=program,
    )
    tp = fast_tracepoint_address(r.of(define), 2)
    assert fast_tracepoint_address(r.of(define), 3) == tp
    assert_in_order(r.of("tstatus"), rf"^Collected {2 * iterations} trace frames\.$")
    a, b = frames_of(r.of(first)), frames_of(r.of(second))
    assert [row[2:] for row in a] == [(i,) for i in range(iterations)], r.of(first)
    assert [row[2:] for row in b] == [(i, max(i - 1, 0)) for i in range(iterations)], r.of(second)
    # The two frames of one hit are next to each other.
    assert sorted(row[0] for row in a + b) == list(range(2 * iterations))
    assert all(abs(x[0] - y[0]) == 1 for x, y in zip(a, b)), (a, b)
    # Neither tracepoint collected the other's data.
    assert printed_value(r.of("print hits")) == "<unavailable>"
    assert re.search(r"No symbol|<unavailable>", r.of("print n")), r.of("print n")
    exited_with(r.of("continue", 2), server.inferior_pid, reference.returncode)


# --------------------------------------------------------------------------- 6. tstart, tstop, again and again


def test_repeated_runs_with_threads(e2e, builds):
    """Five traces in one session, one per round of ftrace_rounds: tstart, two threads call
    work() 20 times each, the program stops at round_done, tstop. Each trace holds that
    round's 40 calls, no more; afterwards the code is as it was before the first tstart and
    the program ends with its own sums.

    The code is read through the server (x/8xb) and, by a shell command, straight from
    /proc/PID/mem, which shows the jump while each trace runs (test_ftrace.py does the same)."""
    program = builds.path(ROUNDS)
    rounds, calls = 5, 20
    reference = native_run(program)
    server = serve_with_agent(e2e, program)
    entry = e2e.line(ROUNDS, "work_entry")
    define = e2e.command_file(f"ftrace {ROUNDS}.c:{entry}", "actions", "collect id, n", "end")
    walk = walk_frames(e2e, "id", "n")
    where = "info tracepoints 2"  # leaves the tracepoint's address in $_
    mem = f"/proc/{server.inferior_pid}/mem"
    direct = f'eval "shell dd if={mem} bs=1 skip=%lu count=8 status=none | od -An -tx1", $_'
    one_round = ("tstart", "continue", where, direct, "tstop", "tstatus", walk)
    r = gdb_tracing(
        e2e,
        server.remote,
        *TO_MAIN,
        define,
        "break round_done",
        where,
        direct,
        "x/8xb $_",
        *(one_round * rounds),
        where,
        direct,
        "x/8xb $_",
        "delete",
        "continue",
        program=program,
    )
    tp = fast_tracepoint_address(r.of(define), 2, ROUNDS)
    before = r.of(direct, 0).split()
    assert before[:2] == ["8b", "05"], before  # mov 0x...(%rip),%eax: see ftrace_rounds.c
    for k in range(rounds):
        assert_in_order(r.of("continue", 1 + k), rf"Breakpoint 3, round_done \(r={k}\)")
        during = r.of(direct, 1 + k).split()
        # jmp rel32 to the pad over the 6-byte instruction; what follows it untouched.
        assert during[0] == "e9" and during[6:] == before[6:], (k, before, during)
        assert_in_order(
            r.of("tstatus", k), r"^Trace stopped by a tstop command", rf"^Collected {2 * calls} trace frames\.$"
        )
        rows = frames_of(r.of(walk, k))
        assert [row[0] for row in rows] == list(range(2 * calls)), r.of(walk, k)
        for thread in range(2):
            ns = [n for _, _, t, n in rows if t == thread]
            assert ns == [100 * k + c for c in range(calls)], (k, thread, r.of(walk, k))
    assert r.of(direct, 1 + rounds).split() == before
    through_server = r.of("x/8xb $_", 0), r.of("x/8xb $_", 1)
    assert through_server[0].startswith(f"0x{tp:x} <work+"), through_server
    assert re.findall(r"\b0x([0-9a-f]{2})\b", through_server[0]) == before, (through_server, before)
    assert through_server[1] == through_server[0]
    exited_with(r.of("continue", 1 + rounds), server.inferior_pid, reference.returncode)
    server.wait_for(rf"^{re.escape(reference.stdout.strip())}$")


# --------------------------------------------------------------------------- 7. disconnected tracing


def test_disconnected_tracing(e2e, builds):
    """disconnected-tracing on: gdb starts the trace and detaches; the program calls step()
    every 10 ms with no gdb at all; a second gdb finds the trace running with the fast
    tracepoint, stops it and reads the frames made while no gdb was there."""
    program = builds.path(PHASES)
    stop_file = e2e.tmp / "stop"
    # No phases: step(i, 0) every 10 ms until stop_file exists.
    server = serve_with_agent(e2e, program, "0", "1", str(stop_file))
    body = e2e.line(PHASES, "step_body")
    define = e2e.command_file(f"ftrace {PHASES}.c:{body}", "actions", "collect n, hits", "end")
    first = gdb_tracing(
        e2e,
        server.remote,
        *TO_MAIN,
        define,
        "set disconnected-tracing on",
        "tstart",
        "print hits",
        "detach",
        program=program,
    )
    assert printed_value(first.of("print hits")) == "0"  # no call made while gdb was there
    assert_in_order(first.of("detach"), rf"^\[Inferior 1 \(process {server.inferior_pid}\) detached\]$")

    server.wait_for(r"^tick 40$")
    r = e2e.gdb(
        server.remote,
        "tstatus",
        "info tracepoints",
        "tstop",
        "tstatus",
        "tfind 30",
        "print n",
        "print hits",
        "tfind none",
        f"shell touch {stop_file}",
        "continue",
        program=program,
    )
    assert_in_order(
        r.of(server.remote),
        r"^Trace is already running on the target\.$",
        r"^Created tracepoint 1 for target's tracepoint 2 at 0x[0-9a-f]+\.$",
    )
    running = assert_in_order(
        r.of("tstatus"),
        r"^Trace is running on the target\.$",
        r"^Collected (\d+) trace frames\.$",
        r"^Trace will continue if GDB disconnects\.$",
    )[1]
    assert int(running.group(1)) >= 40, r.of("tstatus")
    assert_in_order(
        r.of("info tracepoints"),
        r"^1\s+fast tracepoint\s+keep y\s+0x[0-9a-f]+ in step at .*ftrace_phases\.c:\d+$",
        r"^\s+collect n, hits$",
        r"^\s+installed on target$",
    )
    assert_in_order(r.of("tstatus", 1), r"^Trace stopped by a tstop command")
    assert collected(r.of("tstatus", 1)) >= int(running.group(1))
    assert r.of("tfind 30").startswith("Found trace frame 30, tracepoint 1\n"), r.of("tfind 30")
    assert printed_value(r.of("print n")) == "30"
    assert printed_value(r.of("print hits")) == "30"
    # The program, traced no more, runs to its end: its count of calls is its own.
    done = assert_in_order(r.of("continue"), rf"^\[Inferior 1 \(process {server.inferior_pid}\) exited ")[0]
    hits = int(server.wait_for(r"^checksum=\d+ hits=(\d+)$").group(1))
    assert hits >= collected(r.of("tstatus", 1)), (hits, done)


# --------------------------------------------------------------------------- 8. frames reach the server while tracing


def test_frame_count_grows_while_running(e2e, builds):
    """tstatus at each stop between phases, the trace still running: the frame count is
    each time all the calls made so far (the frames reached the server without a tstop)."""
    program = builds.path(PHASES)
    calls = 5
    reference = native_run(program, "4", str(calls))
    server = serve_with_agent(e2e, program, "4", str(calls))
    body = e2e.line(PHASES, "step_body")
    define = e2e.command_file(f"ftrace {PHASES}.c:{body}", "actions", "collect n", "end")
    r = gdb_tracing(
        e2e,
        server.remote,
        *TO_MAIN,
        define,
        "break phase_done",
        "tstart",
        "continue",
        "tstatus",
        "continue",
        "tstatus",
        "continue",
        "tstatus",
        "tstop",
        "tfind 14",
        "print n",
        "tfind",
        "tfind none",
        "delete",
        "continue",
        program=program,
    )
    for k in range(3):
        assert_in_order(r.of("continue", 1 + k), rf"Breakpoint 3, phase_done \(p={k}\)")
        assert_in_order(
            r.of("tstatus", k), r"^Trace is running on the target\.$", rf"^Collected {calls * (k + 1)} trace frames\.$"
        )
    assert r.of("tfind 14").startswith("Found trace frame 14, tracepoint 2\n"), r.of("tfind 14")
    assert printed_value(r.of("print n")) == "2004"
    assert r.of("tfind").strip() == "No trace frame found"
    exited_with(r.of("continue", 4), server.inferior_pid, reference.returncode)
