"""Faults: gdb SIGKILLed at random points of a disconnected trace, again and again. Nothing the
trace collected may be lost, nor anything recorded twice, and the program must end as it would
have.

programs/faults_pace.c calls pace_hit(n) for n = 0, 1, 2, ... every PACE_US, with pace_last = n
just before; a tracepoint in pace_hit collects pace_last, so trace frame k must hold k. The
first gdb defines it, sets disconnected-tracing on and tstarts; every gdb is then SIGKILLed (it
says nothing to the server first) at a random moment of one of these:
- connecting: at a random delay from gdb's start (before, during or after its handshake);
- idle: at the prompt, the program stopped for it (it stays stopped, as gdbserver leaves it,
  until the next gdb resumes it);
- running: in `continue`, the program running and hitting the tracepoint;
- walking: going through the trace frames (QTFrame and memory reads), a frame selected;
- commands: tstatus, info tracepoints, memory reads, bt... in a loop.
Each next gdb, before it is killed in turn, checks what the last one left: the trace is running
and will go on without gdb, the frame count never went down, no trace frame is selected (the
program's live pace_last is read), and the frames hold 0, 1, 2, ...: all those collected since
the last check, a random sample of the older ones, the first and the last, and none past the
count. gdb's tfind refuses to look at a running trace ("May not look at trace frames while
trace is running"), so the checks send QTFrame and memory reads with `maint packet`.
At the end a last gdb lets the program reach pace_end(hits), tstops, finds `Collected N` with N
the number of hits, walks every frame with tfind (frame k holds k), and the program exits as a
native run does, printing hits=N.

KILLS kills (10; TPAGENT_FAULTS_FULL=1: 100), with trap tracepoints and with fast ones. The random
choices come from a seed printed with the test's output; TPAGENT_FAULTS_SEED=N replays a run.

gdbserver 13 keeps the frames too, but when gdb dies in `continue` it does not listen again until
the program stops by itself: here, never.
"""

import os
import random
import re
import time

import pytest

from harness import DISCONNECTED, WAIT_TIMEOUT, assert_in_order, wait_until
from scenario import TO_MAIN, FastTrace, Scenario, ftrace, record_reliability, trace

pytestmark = pytest.mark.tpagent_only(
    "when gdb dies in `continue`, gdbserver 13 does not listen again until the program stops by itself"
)

FULL = os.environ.get("TPAGENT_FAULTS_FULL") == "1"
KILLS = 100 if FULL else 10
PROGRAM = "faults_pace"
PACE_US = 10000  # 100 hits a second while no gdb holds the program stopped
# Frames checked again at each reconnection, at random among the older ones.
SAMPLE = 200
# The number gdb gives the tracepoint after TO_MAIN: the target's number for it ever after.
TARGET_TRACEPOINT = 2
MODES = ("connecting", "idle", "running", "walking", "commands")
CONNECTED = r"Remote debugging from host"
CHECKED = re.compile(r"^pace-check frames=(\d+) live=(-?\d+) checked=(\d+) wrong=(.*)$", re.M)

# gdb's python: a packet sent with `maint packet` and the reply (run-length encoding undone),
# and pace_last as the target shows it (in the selected trace frame, if any).
PACKET_HELPERS = (
    "import random, re",
    "def packet(p):",
    "    out = gdb.execute('maint packet ' + p, to_string=True)",
    "    raw = re.search(r'^received: \"(.*)\"$', out, re.M).group(1)",
    "    text, i = '', 0",
    "    while i < len(raw):",
    "        if raw[i] == '*' and text:",
    "            text += text[-1] * (ord(raw[i + 1]) - 29)",
    "            i += 2",
    "        else:",
    "            text += raw[i]",
    "            i += 1",
    "    return text",
    "address = int(gdb.parse_and_eval('(unsigned long) &pace_last'))",
    "def pace_last():",
    "    return int.from_bytes(bytes.fromhex(packet('m%x,8' % address)), 'little', signed=True)",
    "def frame_count():",
    "    return int(re.search(r'tframes:([0-9a-f]+)', packet('qTStatus')).group(1), 16)",
)


def seed() -> int:
    chosen = int(os.environ.get("TPAGENT_FAULTS_SEED") or time.time_ns() % 2**32)
    print(f"random seed {chosen} (TPAGENT_FAULTS_SEED={chosen} replays this run)")
    return chosen


def check_frames(s: Scenario, checked: int, sample_seed: int) -> str:
    """A command checking the trace frames as a reconnected gdb finds them: prints
    "pace-check frames=N live=L checked=C wrong=[...]", N the frame count, L the program's own
    pace_last (read first: a frame left selected would show instead), C the frames looked at:
    CHECKED.. N-1 (new since the last check), SAMPLE of the older ones, the first and the last;
    wrong lists (frame, QTFrame's reply, value) where the frame is not found with the
    tracepoint, or does not hold its number; frame N must not be found."""
    return s.file(
        "python",
        *PACKET_HELPERS,
        "live = pace_last()",
        "frames = frame_count()",
        f"old = min({checked}, frames)",
        f"picked = set(range(old, frames)) | set(random.Random({sample_seed}).sample(range(old), min(old, {SAMPLE})))",
        "picked |= {0, frames - 1} if frames else set()",
        "wrong = []",
        "for k in sorted(picked):",
        "    found = packet('QTFrame:%x' % k)",
        "    value = pace_last()",
        f"    if found != 'F%xT%x' % (k, {TARGET_TRACEPOINT}) or value != k:",
        "        wrong.append((k, found, value))",
        "beyond = packet('QTFrame:%x' % frames)",
        "if beyond != 'F-1':",
        "    wrong.append((frames, beyond, None))",
        "if packet('QTFrame:ffffffff') != 'OK':",
        "    wrong.append(('no frame', 'not OK', None))",
        "print('pace-check frames=%d live=%d checked=%d wrong=%r' % (frames, live, len(picked), wrong[:20]))",
        "end",
    )


def zone(s: Scenario, mode: str) -> list[str]:
    """What gdb is doing when it is killed, after its checks."""
    if mode == "idle":
        # In gdb's own python rather than in a shell child that could outlive it.
        return ["python import time; time.sleep(60)"]
    if mode == "running":
        return ["continue"]
    if mode == "walking":
        return [s.file(
            "python",
            *PACKET_HELPERS,
            "while True:",
            "    for k in range(frame_count()):",
            "        packet('QTFrame:%x' % k)",
            "        pace_last()",
            "    packet('QTFrame:ffffffff')",
            "end",
        )]
    assert mode == "commands", mode
    commands = ("tstatus", "info tracepoints", "x/2gx &pace_last", "maint packet qTStatus", "info threads", "bt")
    return [s.file(
        "python",
        "while True:",
        f"    for command in {commands!r}:",
        "        gdb.execute(command, to_string=True)",
        "end",
    )]


def killed(s: Scenario, rng: random.Random, mode: str, commands: list[str]):
    """gdb runs COMMANDS and then MODE's activity, and is SIGKILLed at a random moment of it
    (connecting: at a random moment from its start, COMMANDS or not). Its output, once the
    server has seen the connection go (if it ever came)."""
    marker = s.e2e.tmp / f"gdb-checked-{time.monotonic_ns()}"
    if mode == "connecting":
        # Never to the end of its commands: gdb -batch would kill the program as it quits.
        gdb = s.gdb_start(*commands, *zone(s, "idle"))
        time.sleep(rng.uniform(0, 1.5))
    else:
        gdb = s.gdb_start(*commands, f"shell touch {marker}", *zone(s, mode))
        s.e2e.wait_for_file(marker)
        time.sleep(rng.uniform(0, 0.8))
    gdb.kill()
    # Every connection the server took is over before the next gdb comes.
    gone = lambda: len(re.findall(DISCONNECTED, s.server.output)) == len(re.findall(CONNECTED, s.server.output))
    assert wait_until(gone, WAIT_TIMEOUT), f"the server did not see gdb go:\n{s.server.output}"
    return s.wait(gdb)


def checks_pass(r, commands_done: bool, checked: int) -> int:
    """What a reconnected gdb found (R: its run, if it got through its checks) is right; the
    frame count it saw, or CHECKED if it saw none."""
    check = CHECKED.search(r.output)
    if not commands_done and check is None:
        return checked
    assert_in_order(r.of(r.commands[0]), r"^Trace is already running on the target\.$")
    status = r.status()
    assert (status.running, status.on_disconnect) == (True, "continue"), status
    frames, live, looked_at, wrong = int(check[1]), int(check[2]), int(check[3]), check[4]
    assert status.collected == frames, (status, check[0])
    assert frames >= checked, f"the frame count went down from {checked}: {check[0]}"
    assert live in (frames - 1, frames), f"a trace frame was left selected, or frames are missing: {check[0]}"
    assert wrong == "[]", check[0]
    assert looked_at >= frames - checked, check[0]
    return frames


@pytest.mark.timeout(1800 if FULL else 120)
@pytest.mark.parametrize("fast", [False, True], ids=["trap", "fast"])
def test_every_frame_survives_gdb_killed_again_and_again(e2e, fast):
    """KILLS gdbs killed at random moments of the trace (see above), each checking what the last
    one left; the last gdb finds every hit a frame, in order, and the program ends normally."""
    rng = random.Random(seed())
    stop = e2e.tmp / "stop"
    s = (FastTrace if fast else Scenario)(e2e, PROGRAM, str(stop), str(PACE_US))
    define = s.define((ftrace if fast else trace)("pace_hit", "collect pace_last"))
    start = [*TO_MAIN, define, "set disconnected-tracing on", "tstart"]
    first = killed(s, rng, rng.choice(MODES[1:]), start)
    assert first.of("tstart").strip() == "", first.of("tstart")

    checked = 0
    for kill in range(1, KILLS):
        mode = rng.choice(MODES)
        commands = ["tstatus", check_frames(s, checked, rng.getrandbits(32))]
        print(f"kill {kill}: {mode}")
        r = killed(s, rng, mode, commands)
        checked = checks_pass(r, mode != "connecting", checked)

    # The last gdb: the program reaches pace_end(hits) with the trace still on, then tstop.
    walk = s.walk("pace_last")
    r = s.gdb(
        "tstatus", check_frames(s, checked, rng.getrandbits(32)), "break pace_end", f"shell touch {stop}",
        "continue", "tstop", "tstatus", "print hits", walk, "tfind none", "delete", "continue",
    )
    checks_pass(r, True, checked)
    # (gdb names the thread where the agent library has one of its own.)
    r.stopped_at(0, r"^(Thread \d+ .* hit )?Breakpoint 2, pace_end \(hits=\d+\)")
    hits = int(r.value("print hits"))
    assert r.trace_stopped("by a tstop command", hits, nth=1)
    # gdb 13 gives its tracepoint (1, uploaded from the target's 2) its own number on the target
    # when it inserts breakpoints during a trace (download_tracepoint_locations), so tfind can no
    # longer map the target's number back and shows it as is.
    assert r.frames(walk) == [(k, TARGET_TRACEPOINT, k) for k in range(hits)]
    s.exits_as_natively(r.of("continue", 1))
    s.server.wait_for(rf"^hits={hits}$")
    print(f"{KILLS} kills, {hits} frames")
    record_reliability("gdb killed (SIGKILL) at random moments of a disconnected trace", KILLS, hits)
