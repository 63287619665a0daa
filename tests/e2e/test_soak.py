"""Soak: four threads hit one fast tracepoint hundreds of thousands of times (eight threads ten
million times each with TPAGENT_SOAK_FULL=1) into a circular trace buffer, while gdb, at a breakpoint every so
often, stops the trace, has tpagent save it (tsave -r) and starts it again. Every saved file
must hold exactly what tstatus said, in time order, each thread's hits complete.

programs/soak.c: threads 0..THREADS-1 each call traced(thread, count) for count = 0 .. HITS - 1; main
calls checkpoint(k) for k = 1 .. CHECKPOINTS while they run (by their progress, not by the
clock), then finished() once they are joined. The traced line's own instruction counts each
thread's calls, so at any stop gdb reads (calls_of[]) exactly how many calls passed the
tracepoint. The fast tracepoint collects $regs (rdi = thread, rsi = count), count,
$trace_timestamp_ns and $trace_thread. gdb starts the trace at main; at each checkpoint, and at
finished(), it reads the calls, then tstatus, info tracepoints, tstop, tstatus, tsave -r FILE,
and tstart again (not after finished()), and continues. A "cycle" is one trace run, tstart to
tstop: the threads run only then.

What must hold, for each cycle:
- tpdump --json reads every frame of its file; they are numbered 0 .. N-1, N being the frames
  tstatus reported in the buffer at that stop (before tstop and after alike), and the file's own
  status says the same;
- frames created >= frames kept; hits (info tracepoints) = frames created (the tracepoint has no
  condition) = the calls the threads made in the cycle (the program's own count);
- every frame is the tracepoint's, at its address, from a thread 0..3 (rdi), and the collected
  count is rsi;
- frames are in collection order: tpagent orders them by a time-stamp-counter stamp the
  collector takes again right before an action reads a clock. A frame's clock is read after
  its stamp, never before, so in stamp order no frame's $trace_timestamp_ns exceeds a later
  frame's by more than its own delay between the two reads: some nanoseconds, unless the
  thread was preempted between them. So at most ORDER_LATE of the frames (the preempted
  ones) may exceed a later frame's by over ORDER_WINDOW_NS, none by over ORDER_SLACK_NS (a
  thread tpagent stopped inside the collector is run out of it at once, not stepped for tens
  of milliseconds). Frames merged by chunk rather than by stamp fail this by hundreds of
  frames at every chunk of every thread; comparing neighbours only would not (two threads
  whose reads interleave step back by a few ns at a few percent of the frames, and a merge
  by chunk steps back once a chunk);
- each thread's counts are consecutive and end at its last call of the cycle (a circular buffer
  drops the oldest frames only; without a wrap they start at its first call); each thread's
  $trace_thread is one thread id, the same in every file, and no two threads share one;
tpagent's RSS at the last stop is within RSS_SLACK of what it was at the first (frames are read
where the program wrote them, and a circular buffer's size bounds them: nothing may grow with the
hits); and the program runs to its end, printing what a native run prints, gdb reports no signal
and tpagent's output holds no sanitizer report. Every violated check is listed in one failure.
"""

import json
import os
import re
import subprocess
from dataclasses import dataclass
from pathlib import Path

import pytest

# How far collection order may seem to step back in $trace_timestamp_ns (see the docstring).
ORDER_WINDOW_NS = 1_000
ORDER_LATE = 0.005
ORDER_SLACK_NS = 100_000_000

from scenario import TO_MAIN, FastTrace, TraceStatus, ftrace, record_reliability, tracepoint_address

PROGRAM = "soak"
FULL = os.environ.get("TPAGENT_SOAK_FULL") == "1"
HITS = 10_000_000 if FULL else 200_000  # per thread
CHECKPOINTS = 9 if FULL else 3  # cycles: one more
THREADS = 8 if FULL else 4  # soak.c's third argument
# tpagent's RSS may grow this much from the first stop to the last (the buffer's pages, mapped
# in tpagent too, are all touched by the first wrap; what is left is tpdump-sized bookkeeping).
RSS_SLACK = 8 << 20
BUFFER_BYTES = 4 << 20  # some 20,000 of these frames: every cycle wraps it
TRACEPOINT = 2  # TO_MAIN's breakpoint is gone
# No timing is checked: these only bound a hung run, generously for a loaded machine or a
# sanitizer build; the whole test stays under ctest's limit (600 s, soak.full 3600 s).
GDB_SECONDS = 2400 if FULL else 300
TEST_SECONDS = 3300 if FULL else 540
TPDUMP_SECONDS = 60
CALLS = 'printf "calls{}\\n"{}'.format(" %ld" * THREADS, "".join(f", *calls_of[{t}]" for t in range(THREADS)))
SIGNAL_REPORTS = re.compile(r"Program received signal|Program terminated with signal")
SANITIZER_REPORTS = re.compile(r"ERROR: (Address|Leak)Sanitizer|runtime error:|SUMMARY: \w+Sanitizer")


@dataclass(frozen=True)
class Cycle:
    """One trace run as gdb saw it at its stop."""

    number: int
    trace_file: Path
    before: TraceStatus  # tstatus before tstop
    after: TraceStatus  # tstatus after tstop
    hits: int  # info tracepoints
    calls_from: list[int]  # each thread's calls at tstart
    calls_to: list[int]  # and at the stop

    @property
    def wrapped(self) -> bool:
        return self.after.created is not None and self.after.created > self.after.frames


def cycle_commands(trace_file: Path, rss: str) -> tuple[str, ...]:
    """At a stop: the program's calls, the trace's status and hits, then the trace saved, and
    tpagent's RSS (the command RSS)."""
    return (CALLS, "tstatus", f"info tracepoints {TRACEPOINT}", "tstop", "tstatus", f"tsave -r {trace_file}", rss)


def hits_of(info_tracepoints: str) -> int:
    found = re.search(r"tracepoint already hit (\d+) times?", info_tracepoints)
    return int(found.group(1)) if found else 0


def calls_of(text: str) -> list[int]:
    found = re.fullmatch(r"calls" + r" (\d+)" * THREADS, text.strip())
    assert found, f"not the program's calls: {text!r}"
    return [int(n) for n in found.groups()]


# --------------------------------------------------------------------------- the file's checks


def tpdump_frames(tool: Path, trace_file: Path) -> tuple[list[dict], str | None]:
    """Every frame tpdump --json reads (registers rdi, rsi, rip only), and what went wrong."""
    argv = [str(tool), "--json", "--registers", "rdi,rsi,rip", str(trace_file)]
    out = subprocess.run(argv, capture_output=True, text=True, timeout=TPDUMP_SECONDS)
    frames = []
    for n, line in enumerate(out.stdout.splitlines()):
        try:
            frames.append(json.loads(line))
        except json.JSONDecodeError as error:
            return frames, f"tpdump --json line {n} is not JSON ({error}): {line[:200]!r}"
    if out.returncode != 0:
        return frames, f"tpdump exit status {out.returncode} after {len(frames)} frames: {out.stderr[:2000]}"
    return frames, None


def file_status(tool: Path, trace_file: Path) -> tuple[int, int] | None:
    """(frames, created) from the file's own status, as tpdump prints it."""
    out = subprocess.run([str(tool), "--registers", "none", "--frames", "0", str(trace_file)],
                         capture_output=True, text=True, timeout=TPDUMP_SECONDS)
    found = re.search(r"^status: .*?(\d+) frames \((\d+) created\)", out.stdout, re.M)
    return (int(found.group(1)), int(found.group(2))) if found else None


def count_checks(cycle: Cycle, program_calls: int, problems: list[str]) -> None:
    """What tstatus and info tracepoints said, against each other and the program's count."""
    before, after = cycle.before, cycle.after
    if (before.frames, before.created) != (after.frames, after.created):
        problems.append(f"tstatus before tstop ({before.frames} frames of {before.created} created) "
                        f"differs from after ({after.frames} of {after.created})")
    created = after.created if after.created is not None else after.frames
    if created is None or after.frames is None:
        problems.append(f"tstatus after tstop shows no frame counts:\n{after.text}")
        return
    if created < after.frames:
        problems.append(f"frames created {created} < frames kept {after.frames}")
    if cycle.hits != created:
        problems.append(f"hits {cycle.hits} (info tracepoints) != frames created {created} (tstatus)")
    if cycle.hits != program_calls:
        problems.append(f"hits {cycle.hits} != calls of traced() in the cycle {program_calls}, "
                        f"{program_calls - cycle.hits:+d} (the program's count; per thread "
                        f"{cycle.calls_from} -> {cycle.calls_to})")


def frame_checks(frames: list[dict], address: int, problems: list[str]) -> dict[int, list[tuple]]:
    """Each frame on its own, and the timestamps' order; returns each thread's (frame, count,
    $trace_thread) in frame order."""
    by_thread: dict[int, list[tuple[int, int, int]]] = {}
    wrong: dict[str, list[str]] = {}
    clocks: list[tuple[int, int]] = []  # (frame, $trace_timestamp_ns)
    for n, frame in enumerate(frames):
        regs = {name: int(value, 16) for name, value in frame.get("registers", {}).items()}
        values = {v["name"]: v["value"] for v in frame.get("variables", [])}
        memory = frame.get("memory", [])
        where = f"frame {frame.get('frame')}: {json.dumps(frame)[:400]}"
        if frame.get("frame") != n:
            wrong.setdefault(f"frame numbered other than its place {n}", []).append(where)
        if frame.get("tracepoint") != TRACEPOINT or int(frame.get("pc", "0"), 16) != address:
            wrong.setdefault("not the tracepoint's frame or address", []).append(where)
        if regs.get("rip") != address or regs.get("rdi") not in range(THREADS) or "rsi" not in regs:
            wrong.setdefault("registers: rip not the tracepoint, or rdi not a thread", []).append(where)
            continue
        if len(memory) != 1 or bytes.fromhex(memory[0]["hex"]) != regs["rsi"].to_bytes(8, "little"):
            wrong.setdefault("collected count missing or not rsi", []).append(where)
        if "$trace_timestamp_ns" not in values or "$trace_thread" not in values:
            wrong.setdefault("$trace_timestamp_ns or $trace_thread missing", []).append(where)
            continue
        clocks.append((n, values["$trace_timestamp_ns"]))
        by_thread.setdefault(regs["rdi"], []).append((n, regs["rsi"], values["$trace_thread"]))
    for what, found in wrong.items():
        problems.append(f"{what}: {len(found)} frames, the first: {found[0]}")
    late = late_clocks(clocks)
    if len(late) > ORDER_LATE * len(frames) or any(by > ORDER_SLACK_NS for _, by, _ in late):
        problems.append(f"$trace_timestamp_ns exceeds a later frame's by over {ORDER_WINDOW_NS} ns at "
                        f"{len(late)} of {len(frames)} frames, the first: "
                        + "; ".join(f"frame {n} by {by} ns (frame {later})" for n, by, later in late[-3:][::-1]))
    return by_thread


def late_clocks(clocks: list[tuple[int, int]]) -> list[tuple[int, int, int]]:
    """The frames whose clock exceeds the least clock of the frames after them by over
    ORDER_WINDOW_NS: (frame, by how much, the later frame), last first."""
    late = []
    least = None  # (clock, frame) of the frames after this one
    for n, clock in reversed(clocks):
        if least is not None and clock - least[0] > ORDER_WINDOW_NS:
            late.append((n, clock - least[0], least[1]))
        if least is None or clock < least[0]:
            least = (clock, n)
    return late


def thread_checks(cycle: Cycle, by_thread: dict, thread_ids: dict[int, int], problems: list[str]) -> None:
    """Each thread's counts: consecutive, ending at its last call of the cycle (and starting
    at its first when the buffer did not wrap); one $trace_thread per thread."""
    for thread in range(THREADS):
        rows = by_thread.get(thread, [])
        made = cycle.calls_to[thread] - cycle.calls_from[thread]
        if not rows:
            if made and not cycle.wrapped:
                problems.append(f"thread {thread}: no frame, for {made} calls in a buffer that kept them all")
            continue
        counts = [count for _, count, _ in rows]
        gaps = [(a, b) for (a, b) in zip(rows, rows[1:]) if b[1] != a[1] + 1]
        if gaps:
            (fa, ca, _), (fb, cb, _) = gaps[0]
            problems.append(f"thread {thread}: counts not consecutive at {len(gaps)} places, the first: "
                            f"frame {fa} count {ca}, then frame {fb} count {cb}")
        first = cycle.calls_from[thread] if not cycle.wrapped else None
        if counts[-1] != cycle.calls_to[thread] - 1 or (first is not None and counts[0] != first):
            expected = f"{first if first is not None else '...'} .. {cycle.calls_to[thread] - 1}"
            problems.append(f"thread {thread}: counts {counts[0]} .. {counts[-1]}, its calls were {expected}")
        ids = {lwp for _, _, lwp in rows}
        if len(ids) != 1:
            problems.append(f"thread {thread}: several $trace_thread values {sorted(ids)[:8]}")
        lwp = rows[0][2]
        if thread_ids.setdefault(thread, lwp) != lwp:
            problems.append(f"thread {thread}: $trace_thread {lwp}, {thread_ids[thread]} in an earlier file")
    owners = {}
    for thread, lwp in thread_ids.items():
        if owners.setdefault(lwp, thread) != thread:
            problems.append(f"threads {owners[lwp]} and {thread} share $trace_thread {lwp}")


def check_cycle(cycle: Cycle, tool: Path, address: int, thread_ids: dict[int, int]) -> list[str]:
    """Every problem with one cycle's counts and file, each prefixed with the cycle."""
    problems: list[str] = []
    program_calls = sum(cycle.calls_to) - sum(cycle.calls_from)
    count_checks(cycle, program_calls, problems)
    frames, unreadable = tpdump_frames(tool, cycle.trace_file)
    if unreadable:
        problems.append(unreadable)
    if len(frames) != cycle.after.frames:
        problems.append(f"the file holds {len(frames)} frames, tstatus said {cycle.after.frames}")
    status = file_status(tool, cycle.trace_file) if frames else None
    if frames and status != (cycle.after.frames, cycle.after.created or cycle.after.frames):
        problems.append(f"the file's status (frames, created) {status} is not tstatus's")
    by_thread = frame_checks(frames, address, problems)
    thread_checks(cycle, by_thread, thread_ids, problems)
    return [f"cycle {cycle.number} ({cycle.trace_file.name}): {p}" for p in problems]


# --------------------------------------------------------------------------- the test


@pytest.mark.tpagent_only("tsave -r (QTSave) and $trace_timestamp_ns are tpagent's")
@pytest.mark.timeout(TEST_SECONDS)
def test_soak(e2e):
    s = FastTrace(e2e, PROGRAM, str(HITS), str(CHECKPOINTS), str(THREADS))
    rss = f"shell grep VmRSS /proc/{s.server.pid}/status"
    define = s.define(
        "tvariable $trace_timestamp_ns",
        "tvariable $trace_thread",
        ftrace(s.at("traced"), "collect $regs, count, $trace_timestamp_ns, $trace_thread"),
    )
    files = [e2e.tmp / f"soak-{k}.tf" for k in range(CHECKPOINTS + 1)]
    commands = [
        *TO_MAIN, define, "set circular-trace-buffer on", f"set trace-buffer-size {BUFFER_BYTES}",
        "break checkpoint", "break finished", "tstart",
    ]
    for k, trace_file in enumerate(files):
        commands += ["continue", *cycle_commands(trace_file, rss), *(["tstart"] if k < CHECKPOINTS else [])]
    commands += ["delete", "continue"]
    r = s.gdb(*commands, timeout=GDB_SECONDS)

    # The run went as planned: else the rest would only say so less clearly.
    address = tracepoint_address(r.of(define), TRACEPOINT, fast=True, source=PROGRAM)
    harm = SIGNAL_REPORTS.search(r.output)
    assert harm is None, f"gdb reported {harm.group(0)!r}:\n{r.output[max(0, harm.start() - 4000):][:6000]}"
    for k in range(CHECKPOINTS + 1):
        where = f"checkpoint \\(k={k + 1}\\)" if k < CHECKPOINTS else "finished \\(\\)"
        assert re.search(rf"hit Breakpoint \d+, {where}", r.of("continue", k + 1)), (
            f"cycle {k}: gdb did not stop at {where}:\n{r.of('continue', k + 1)}")
        assert r.of(f"tsave -r {files[k]}").strip() == "", r.of(f"tsave -r {files[k]}")
    for k in range(CHECKPOINTS):
        assert r.of("tstart", k + 1).strip() == "", f"cycle {k + 1}: tstart said {r.of('tstart', k + 1)!r}"

    cycles = []
    calls_from = [0] * THREADS  # the trace starts at main, before the threads
    for k, trace_file in enumerate(files):
        calls_to = calls_of(r.of(CALLS, k))
        hits = hits_of(r.of(f"info tracepoints {TRACEPOINT}", k))
        cycles.append(Cycle(k, trace_file, r.status(2 * k), r.status(2 * k + 1), hits, calls_from, calls_to))
        calls_from = calls_to
    assert calls_from == [HITS] * THREADS, f"the threads made {calls_from} calls, not {HITS} each"

    tool = Path(e2e.server_bin.path).parent / "tpdump"
    problems: list[str] = []
    thread_ids: dict[int, int] = {}
    kept = None
    for cycle in cycles:
        found = check_cycle(cycle, tool, address, thread_ids)
        problems += found
        # Each file is tens of MB: keep the first one that shows a problem, for a look.
        if found and kept is None:
            kept = cycle.trace_file
        else:
            cycle.trace_file.unlink(missing_ok=True)
    rss_kib = [int(re.search(r"VmRSS:\s+(\d+) kB", r.of(rss, k)).group(1)) for k in range(len(files))]
    # (Not under a sanitizer: ASan's quarantine holds freed memory.)
    if not e2e.server_bin.sanitized and (rss_kib[-1] - rss_kib[0]) * 1024 > RSS_SLACK:
        problems.append(f"tpagent's RSS grew from {rss_kib[0]} to {rss_kib[-1]} KiB over the cycles: {rss_kib}")
    if not any(cycle.wrapped for cycle in cycles):
        problems.append(f"no cycle wrapped the {BUFFER_BYTES}-byte circular buffer: the test misses its point")

    # The program's end, as a native run's; tpagent ends with it, unharmed.
    try:
        s.ends_as_natively(r.of("continue", CHECKPOINTS + 2))
    except AssertionError as error:
        problems.append(f"the program did not end as a native run does: {error}")
    code = s.server.wait_exit(timeout=120)
    if code < 0:
        problems.append(f"tpagent ended by signal {-code}")
    reports = SANITIZER_REPORTS.search(s.server.output)
    if reports:
        problems.append(f"sanitizer report in tpagent's output:\n{s.server.output[reports.start():][:8000]}")

    summary = "\n".join(f"- {p}" for p in problems)
    assert not problems, (
        f"soak: {len(problems)} violated checks ({THREADS} threads x {HITS} hits, {len(cycles)} cycles"
        f"{f'; {kept} kept' if kept else ''}):\n{summary}")
    print(f"tpagent's RSS at each stop (KiB): {rss_kib}")
    record_reliability(f"Soak: {THREADS} threads x {HITS:,} fast-tracepoint hits, circular buffer, tstart/tstop/tsave -r"
                       f" {len(cycles)} times", 1, sum(c.after.frames or 0 for c in cycles))
