"""gdb behaviours that must match gdbserver's (the tracing conformance list): passed signals,
tstop notes, tstart during a run, time units."""

import re
import time
from pathlib import Path

import pytest

from harness import assert_in_order
from scenario import (
    TO_MAIN,
    FastTrace,
    Scenario,
    ftrace,
    trace,
    trace_to,
    tracepoint_rows,
    tracepoint_table,
    while_stepping,
)
from shared import PROGRAM


def test_passed_signals_do_not_stop_the_program(e2e):
    """gdb ends QPassSignals with ';': accepted, so SIGALRM and SIGCHLD (nostop, pass by
    default) reach the program without a stop reply each."""
    s = Scenario(e2e, "alarms", options=("--debug",))
    r = s.gdb("continue")
    assert_in_order(r.of("continue"), r"^\[Inferior 1 \(process \d+\) exited normally\]$")
    s.server.wait_for(r"^alarms>=20 children=1$")
    s.server.wait_for(r"-> W00")
    log = s.server.output
    assert re.search(r"<- QPassSignals:[0-9a-f;]*;\n.*-> OK", log), "QPassSignals refused"
    assert not re.search(r"-> T(0e|11)", log), "a passed SIGALRM or SIGCHLD stopped the program"


def test_tstop_note_and_a_new_run_during_a_run(e2e):
    """`tstop NOTE`: tstatus shows the note. tstart while a trace runs starts a new run (gdb
    asks first), as with gdbserver: the buffer starts empty."""
    s = Scenario(e2e, PROGRAM, "3")
    define = s.define(*trace("record_hit", "collect iteration"))
    r = s.gdb(
        *TO_MAIN, define, "break other_hit", "tstart", "continue", "tstatus",
        "tstart", "tstatus", "tstop because enough", "tstatus",
    )
    assert r.status(0).running and r.status(0).collected == 1, r.status(0)
    assert r.status(1).running and r.status(1).collected == 0, r.status(1)
    assert_in_order(r.of("tstatus", 2), r"^Trace stopped by a tstop command \(because enough\)\.$")


def test_reconnected_gdb_numbers_tracepoints_as_defined(e2e):
    """A new gdb (or target tfile) makes its tracepoints from the target's list in the order
    they were defined: record_hit, other_hit, finished become 1, 2, 3 again (gdbserver's list
    comes out reversed)."""
    stop_file = e2e.tmp / "stop"
    s = Scenario(e2e, PROGRAM, "0", str(stop_file))
    define = s.define(trace("record_hit"), trace("other_hit"), trace("finished"))
    s.gdb(*TO_MAIN, define, "set disconnected-tracing on", "tstart", "detach")
    r = s.gdb("info tracepoints", "tstop", f"shell touch {stop_file}", "continue")
    assert_in_order(
        r.of("info tracepoints"),
        r"^1\s+tracepoint\s+keep y\s+0x[0-9a-f]+ in record_hit at ",
        r"^2\s+tracepoint\s+keep y\s+0x[0-9a-f]+ in other_hit at ",
        r"^3\s+tracepoint\s+keep y\s+0x[0-9a-f]+ in finished at ",
    )


def test_time_units_are_gdbserver_microseconds(e2e):
    """$trace_timestamp and tstatus's start/stop times: microseconds since the epoch, one
    clock, as gdbserver's. tpagent's nanosecond clock is a variable named trace_timestamp_ns."""
    before = time.time()
    s = Scenario(e2e, PROGRAM, "2")
    define = s.define(
        "tvariable $trace_timestamp_ns",
        *trace("record_hit", "collect $trace_timestamp", "collect $trace_timestamp_ns"),
    )
    r = s.gdb(
        *TO_MAIN, define, *trace_to("finished"),
        "tfind 0", "print $trace_timestamp", "print $trace_timestamp_ns",
        "tfind 1", "print $trace_timestamp", "print $trace_timestamp_ns",
    )
    after = time.time()
    started = re.search(r"^Trace started at (\d+)\.(\d{6}) secs, stopped (\d+)\.(\d{6}) secs later\.$", r.of("tstatus"), re.M)
    assert started, r.of("tstatus")
    start = int(started.group(1)) + int(started.group(2)) / 1e6
    assert before - 1 <= start <= after + 1, (before, start, after)
    us = [int(r.value("print $trace_timestamp", n)) for n in (0, 1)]
    ns = [int(r.value("print $trace_timestamp_ns", n)) for n in (0, 1)]
    assert start * 1e6 - 1e6 <= us[0] <= us[1] <= after * 1e6 + 1e6, (start, us)
    # The same interval on both clocks (a millisecond's slack).
    assert abs((ns[1] - ns[0]) / 1000 - (us[1] - us[0])) < 1000, (us, ns)


def test_resent_tracepoints_and_sources_during_a_run(e2e):
    """gdb re-sends a trap tracepoint with other actions during a run (a library loading moves
    its locations): accepted, the next hits collect by it. QTDPsrc of a tracepoint gdb could
    not define (an action it failed to compile) is ignored, as gdbserver does."""
    with Scenario(e2e, PROGRAM).raw() as rsp:
        entry = rsp.pc()
        assert rsp.request("QTinit") == "OK"
        assert rsp.request(f"QTDP:1:{entry:016x}:E:0:0") == "OK"
        assert rsp.request("QTStart") == "OK"
        assert rsp.request(f"QTDP:1:{entry:016x}:E:0:0-") == "OK"
        assert rsp.request(f"QTDP:-1:{entry:016x}:R01") == "OK"
        assert rsp.request(f"QTDPsrc:1:{entry:x}:cmd:0:5:6163747320") == "OK"
        assert rsp.request(f"QTDPsrc:4:{entry + 8:x}:at:0:3:666f6f") == "OK"
        pieces = tracepoint_table(rsp)
        assert [p for p in pieces if p.startswith("A1:")] == [f"A1:{entry:x}:R01"], pieces
        assert [number for number, _, _ in tracepoint_rows(rsp)] == [1], pieces
        assert rsp.request("QTStop") == "OK"


# --------------------------------------------------------------------------- fast tracepoints shared


FAST = "ftrace_loop"


@pytest.mark.tpagent_only("gdbserver cannot put a trap and a fast tracepoint at one address")
def test_trap_and_fast_tracepoint_at_one_address(e2e):
    """trace and ftrace at traced()'s first line: each of 4 hits makes a frame of each (the
    fast one is collected through the trap then); the program ends right."""
    s = FastTrace(e2e, FAST, "4")
    s.quiet_tstart = False  # tpagent says the fast one runs at trap speed, and why
    line = f"{FAST}.c:{s.line('traced_entry')}"
    define = s.define(trace(line, "collect hits"), ftrace(line, "collect n"))
    walk = s.walk("$tracepoint")
    r = s.gdb(*TO_MAIN, define, *trace_to("finished"), walk, "tfind none", "delete", "continue")
    if not e2e.is_gdbserver:
        assert re.search(r"^Fast tracepoint 3 at 0x[0-9a-f]+ is collected through a trap \(trap speed\): "
                         r"trap tracepoint 2 is at the same address\.$", r.of("tstart"), re.M), r.of("tstart")
    else:
        assert r.of("tstart").strip() == "", r.of("tstart")
    r.trace_stopped("by a tstop command", 8)
    assert sorted(row[1] for row in r.frames(walk)) == [2] * 4 + [3] * 4
    s.ends_as_natively(r.of("continue", 2))


@pytest.mark.parametrize("always_inserted", ["on", "off"])
def test_breakpoint_and_fast_tracepoint_at_one_address(e2e, always_inserted):
    """gdb's breakpoint where a fast tracepoint's jump goes: the breakpoint stops the program
    at every call, the tracepoint collects once per call, in either order of definition."""
    s = FastTrace(e2e, FAST, "3")
    line = f"{FAST}.c:{s.line('traced_entry')}"
    define = s.define(ftrace(line, "collect n"))
    walk = s.walk("n")
    r = s.gdb(
        *TO_MAIN, f"set breakpoint always-inserted {always_inserted}", f"break {line}", define,
        "break finished", "tstart", "continue", "continue", "continue", "continue", "tstop", "tstatus",
        walk, "tfind none", "delete", "continue",
    )
    for n in range(3):
        assert_in_order(r.of("continue", n + 1), rf"^Breakpoint 2, traced \(n={n}, scale=3\)")
    assert_in_order(r.of("continue", 4), r"^Breakpoint 4, finished \(\)")
    r.trace_stopped("by a tstop command", 3)
    assert [row[2] for row in r.frames(walk)] == [0, 1, 2]
    s.ends_as_natively(r.of("continue", 5))


@pytest.mark.tpagent_only("gdbserver 13 refuses the re-sent definition with actions")
def test_fast_tracepoint_added_during_a_run(e2e):
    """ftrace defined while a trace runs: gdb sends it at once (before its actions, which
    stay on the host until the next tstart) and it collects from then on, beside the trap
    tracepoint already there: a frame at each of the 3 calls after halfway()."""
    s = FastTrace(e2e, FAST, "6")
    first = s.define(trace("halfway"))
    later = s.define(ftrace(f"{FAST}.c:{s.line('traced_entry')}"))
    walk = s.walk("$tracepoint")
    r = s.gdb(
        *TO_MAIN, first, "break halfway", "tstart", "continue", later,
        "break finished", "continue", "tstop", "tstatus", walk,
        "tfind none", "delete", "continue",
    )
    r.trace_stopped("by a tstop command", 4)
    assert [row[1] for row in r.frames(walk)] == [2, 4, 4, 4], r.of(walk)
    s.ends_as_natively(r.of("continue", 3))


def test_range_stepping(e2e):
    """`next` over lines of several instructions: gdb range-steps (vCont;r, offered in
    vCont?), and the program goes on right."""
    s = Scenario(e2e, PROGRAM, "2", options=("--debug",))
    r = s.gdb(*TO_MAIN, "next", "next", "next", "continue")
    # Waited for: the server's log is read as it comes, maybe after gdb has ended.
    s.server.wait_for(r"<- vCont;r[0-9a-f]+,[0-9a-f]+")
    s.ends_as_natively(r.of("continue", 1))


def test_while_stepping_with_a_pass_count(e2e):
    """passcount 2 and while-stepping 4: the trace stops after the second hit's steps are
    collected, 2 x (1 + 4) frames, as gdbserver."""
    s = Scenario(e2e, PROGRAM, "5")
    define = s.define(trace("stepped", "collect x", while_stepping(4, "collect $rip")), "passcount 2 2")
    r = s.gdb(*TO_MAIN, define, *trace_to("finished"), "tfind none", "delete", "continue")
    assert r.status().stopped == "by tracepoint 2", r.status()  # its pass count
    assert r.status().collected == 10, r.status()
    s.ends_as_natively(r.of("continue", 2))


@pytest.mark.parametrize("kind", ["trace", "ftrace"])
def test_forked_children_run_unharmed(e2e, kind):
    """A program with tracepoints forks (and vforks, then execs): the children run on without
    tpagent's breakpoints or jumps in their copy of the code, as gdb's detach-on-fork expects;
    only the parent's 6 calls are collected."""
    s = (FastTrace if kind == "ftrace" else Scenario)(e2e, "forks")
    define = s.define((ftrace if kind == "ftrace" else trace)(f"forks.c:{s.line('work_entry')}", "collect x"))
    walk = s.walk("x")
    r = s.gdb(*TO_MAIN, define, *trace_to("exit"), walk, "tfind none", "delete", "continue")
    assert [row[2] for row in r.frames(walk)] == [0, 1, 2, 3, 4, 5], r.of(walk)
    s.server.wait_for(r"^children: fork 0 vfork 0 parent 30$")
    s.exited(r.of("continue", 2), 0)


AVX = "avx" in Path("/proc/cpuinfo").read_text().split()


@pytest.mark.skipif(not AVX, reason="this CPU has no AVX (ymm registers)")
def test_avx_pseudo_register_in_frames_and_files(e2e):
    """`collect $ymm15` in a trap tracepoint (gdb collects xmm15 and ymm15h, raw AVX state):
    $ymm15 reads back in the frame, in gdb's tsave file and in tpagent's tsave -r file."""
    s = Scenario(e2e, "avx_regs", pie=False)
    define = s.define(trace("hit", "collect $ymm15"))
    host_file, target_file = e2e.tmp / "host.tf", e2e.tmp / "target.tf"
    lanes = "{0x1, 0x2, 0x3, 0x4, 0x5, 0x6, 0x7, 0x8}"
    r = s.gdb(
        *TO_MAIN, define, *trace_to("printf"), "tfind 1", "print/x $ymm15.v8_int32",
        f"tsave {host_file}", f"tsave -r {target_file}", "tfind none", "delete", "continue",
    )
    assert r.value("print/x $ymm15.v8_int32") == lanes
    s.exited(r.of("continue", 2), 0)
    for file in (host_file, target_file):
        t = s.open_trace_file(file, "tfind 1", "print/x $ymm15.v8_int32")
        assert t.value("print/x $ymm15.v8_int32") == lanes, (file, t.of("print/x $ymm15.v8_int32"))


def test_fast_frames_of_several_threads_in_time_order(e2e):
    """Four threads hit one fast tracepoint, their hits interleaved in time (each call sleeps
    300 us): frames are numbered in the order they were collected, so $trace_timestamp_ns
    (collected by each hit) hardly ever steps back."""
    s = FastTrace(e2e, "ftrace_threads", "300")
    define = s.define(
        "tvariable $trace_timestamp_ns",
        ftrace(f"ftrace_threads.c:{s.line('work_entry')}", "collect $trace_timestamp_ns"),
    )
    walk = s.walk("$trace_timestamp_ns")
    r = s.gdb(*TO_MAIN, define, *trace_to("all_done"), walk, "tfind none", "delete", "continue")
    stamps = [row[2] for row in r.frames(walk)]
    assert len(stamps) == 200, len(stamps)
    # A thread preempted between its frame's place and its clock read (144 us once, in CI)
    # puts a hit or two of that moment out of order; frames in any other order (a thread's
    # after another's, say) would put thousands of the 19,900 pairs out of order.
    late = 20_000  # ns: the instructions between a hit's start and its clock read
    inverted = [(a, b) for i, a in enumerate(stamps) for b in stamps[i + 1:] if b + late < a]
    assert len(inverted) < len(stamps), inverted[:5]


@pytest.mark.tpagent_only("gdbserver has no $trace_thread")
@pytest.mark.parametrize("command", ["trace", "ftrace"])
def test_trace_thread_names_the_collecting_thread(e2e, command):
    """A variable the user names trace_thread reads the id of the thread that collects it, in
    trap and fast tracepoints: four threads, four ids, none of them the main thread's, each
    hit 50 times. Outside a frame gdb gets no value for it."""
    s = FastTrace(e2e, "ftrace_threads")
    place = trace if command == "trace" else ftrace
    define = s.define(
        "tvariable $trace_thread",
        place(f"ftrace_threads.c:{s.line('work_entry')}", "collect $trace_thread"),
    )
    walk = s.walk("$trace_thread")
    r = s.gdb(*TO_MAIN, "info inferiors", define, *trace_to("all_done"), walk, "tfind none",
              "print $trace_thread", "delete", "continue")
    pid = int(re.search(r"process (\d+)", r.of("info inferiors")).group(1))
    ids = [row[2] for row in r.frames(walk)]
    assert len(ids) == 200, len(ids)
    counts = {i: ids.count(i) for i in set(ids)}
    assert len(counts) == 4 and pid not in counts and all(c == 50 for c in counts.values()), counts
    assert all(pid < i < pid + 1000 for i in counts), (pid, counts)
    assert r.value("print $trace_thread") == "void", r.of("print $trace_thread")


@pytest.mark.tpagent_only("gdbserver's jump breaks: the breakpoint lands inside it")
def test_breakpoint_inside_a_fast_tracepoint_jump(e2e):
    """gdb's breakpoint inside the bytes a fast tracepoint's jump replaces (gdb allows fast
    tracepoints only on instructions of 5 bytes or more, so it is one inside the
    instruction), inserted after tstart: the jump gives way to a trap site, which runs the
    instruction from a pad; every call is collected and the program runs right."""
    s = FastTrace(e2e, FAST, "3")
    define = s.define(ftrace(f"{FAST}.c:{s.line('traced_entry')}", "collect n"))
    r = s.gdb(
        *TO_MAIN, "set breakpoint always-inserted off", define, "info tracepoints 2", "break *($_ + 2)",
        "break finished", "tstart", "continue", "tstop", "tstatus", "tfind none", "delete", "continue",
    )
    assert_in_order(r.of("continue", 1), r"^Breakpoint 4, finished \(\)")
    r.trace_stopped("by a tstop command", 3)
    s.ends_as_natively(r.of("continue", 2))
