"""Many trace runs in one session: pads are reused, so the program's mapped memory and
tpagent's RSS stay flat; a pad a thread will still return into is not.

programs/ftrace_cycles.c calls plain(n), guarded(n) and tail(n) four times per iteration
and stops at cycle_done(i) between iterations. gdb puts fast tracepoints on the three
functions (guarded's with a condition, compiled to native code placed near it) and a trap
tracepoint on a later line of tail, then runs CYCLES times: tstart, continue to
cycle_done, tstop, tstatus. Each run places pads (and the condition's code) in the
program; tpagent reuses the earlier runs' pages instead of mapping more.

What must hold:
- every run collects exactly its iteration's frames (the last run too: pads reused many
  times over still lead to the collector), and the last run's frames hold its n;
- the program's mapped memory (the sum of /proc/PID/maps) after the last run is within
  MAPPED_SLACK of what it was after WARM_UP runs, and tpagent's VmRSS within RSS_SLACK;
- the program then runs to its end as a native run does (a stale pad would show).

Measured on the 2-core VM, 1000 runs in about 2 s: before pads were reused the program's
mappings grew by 1.6 MiB from run 10 to run 1000 (a page every 2-3 runs); with reuse they do
not grow at all, nor does tpagent's RSS (nor over 3000 runs with a teval action).

programs/ftrace_callout.c has a fast tracepoint whose pad makes a call (the relocated
`call *%rax`): test_a_pad_a_thread_will_return_into_is_not_reused.
"""

import os
import re

import pytest

from harness import hex_value
from scenario import TO_MAIN, FastTrace, ftrace, trace

PROGRAM = "ftrace_cycles"
CALLOUT = "ftrace_callout"
CYCLES = int(os.environ.get("TPAGENT_CYCLES", "1000"))
WARM_UP = 10
# Growth allowed after the warm-up (measured: none). A tpagent leak of 300 bytes per run, or
# a page mapped in the program every 100 runs, goes over.
MAPPED_SLACK = 16 << 10
RSS_SLACK = 256 << 10
# Tracepoints after TO_MAIN: plain, guarded (n even only), tail (fast), tail_late (trap).
PLAIN, GUARDED, TAIL, TAIL_LATE = 2, 3, 4, 5
FRAMES_PER_RUN = 4 + 2 + 4 + 4
MEASURE = re.compile(r"^after (\d+) runs: mapped (\d+) rss (\d+)$", re.M)


def cycles_script(pid: int, server_pid: int) -> list[str]:
    """gdb's python running the CYCLES runs; prints each run's stop and frame count, and
    the memory figures after WARM_UP runs and after the last."""
    return [
        "python",
        "import re",
        "def mapped(pid):",
        "    total = 0",
        "    for line in open(f'/proc/{pid}/maps'):",
        "        lo, hi = line.split()[0].split('-')",
        "        total += int(hi, 16) - int(lo, 16)",
        "    return total",
        "def rss(pid):",
        "    for line in open(f'/proc/{pid}/status'):",
        "        if line.startswith('VmRSS:'):",
        "            return int(line.split()[1]) * 1024",
        "runs = []",
        f"for k in range({CYCLES}):",
        "    said = gdb.execute('tstart', to_string=True).strip()",
        "    gdb.execute('continue', to_string=True)",
        "    frame = gdb.selected_frame()",
        "    at = int(gdb.parse_and_eval('i')) if frame.name() == 'cycle_done' else frame.name()",
        "    gdb.execute('tstop', to_string=True)",
        "    status = gdb.execute('tstatus', to_string=True)",
        r"    frames = re.search(r'^Collected (\d+) trace frames\.$', status, re.M)",
        "    runs.append((at, frames.group(1) if frames else 'none', said or 'quiet'))",
        f"    if k + 1 in ({WARM_UP}, {CYCLES // 2}, {CYCLES}):",
        f"        print(f'after {{k + 1}} runs: mapped {{mapped({pid})}} rss {{rss({server_pid})}}')",
        "print('runs:', ' '.join(f'{i}/{f}/{s}' for i, f, s in runs))",
        "end",
    ]


@pytest.mark.tpagent_only("gdbserver's jump pads are never reused: its memory grows per run")
@pytest.mark.timeout(300)
def test_many_runs_keep_memory_flat(e2e):
    """CYCLES runs, each stopped at cycle_done: exact frames every run, memory flat."""
    assert CYCLES > WARM_UP
    s = FastTrace(e2e, PROGRAM, str(CYCLES + 2))
    define = s.define(
        ftrace(s.at("plain_entry"), "collect n"),
        ftrace(f"{s.at('guarded_entry')} if n % 2 == 0", "collect n"),
        ftrace(s.at("tail_entry"), "collect n"),
        trace(s.at("tail_late"), "collect n"),
    )
    runs = s.file(*cycles_script(s.pid, s.server.pid))
    walk = s.walk("n")
    r = s.gdb(*TO_MAIN, define, "break cycle_done", runs, walk, "delete", "continue", timeout=240)

    rows = re.search(r"^runs: (.*)$", r.of(runs), re.M).group(1).split()
    assert len(rows) == CYCLES, r.of(runs)[-2000:]
    expected = [f"{k}/{FRAMES_PER_RUN}/quiet" for k in range(CYCLES)]
    wrong = [(k, got) for k, (got, want) in enumerate(zip(rows, expected)) if got != want]
    assert not wrong, wrong[:10]

    # The last run's frames, in the order of the hits: n = i * 4 + k.
    last = CYCLES - 1
    want = []
    for n in range(4 * last, 4 * last + 4):
        want += [(PLAIN, n)] + ([(GUARDED, n)] if n % 2 == 0 else []) + [(TAIL, n), (TAIL_LATE, n)]
    assert [row[1:] for row in r.frames(walk)] == want, r.of(walk)

    figures = {int(k): (int(m), int(rss)) for k, m, rss in MEASURE.findall(r.of(runs))}
    (mapped_warm, rss_warm), (mapped_end, rss_end) = figures[WARM_UP], figures[CYCLES]
    print(f"program mapped {mapped_warm} -> {mapped_end}, tpagent rss {rss_warm} -> {rss_end}")
    assert mapped_end - mapped_warm <= MAPPED_SLACK, figures
    if e2e.server_bin.sanitized:
        print("tpagent's RSS is not checked: ASan's quarantine holds freed memory")
    else:
        assert rss_end - rss_warm <= RSS_SLACK, figures
    s.ends_as_natively(r.of("continue", 1))


def pad_ranges(text: str) -> list[tuple[int, int]]:
    """The anonymous executable mappings (pads) of a /proc/PID/maps listing."""
    rows = re.findall(r"^([0-9a-f]+)-([0-9a-f]+) ..x. \S+ \S+ 0 *$", text, re.M)
    return [(int(lo, 16), int(hi, 16)) for lo, hi in rows]


@pytest.mark.tpagent_only("gdb refuses ftrace on a 2-byte instruction: sent as raw packets")
def test_a_pad_a_thread_will_return_into_is_not_reused(e2e):
    """A fast tracepoint on through()'s `call *%rax`, whose pad makes the call: the program
    stops in callee() with a return address into the pad on its stack. The trace stops and
    a new one starts with a fast tracepoint elsewhere: its pad must not go where the thread
    will return, so the pads grow by a new page. Once callee() has returned (the program
    stops in it again, called directly), a third run reuses the pages: no growth. That run
    goes on to the end, its pad in reused memory collecting spare()'s call, and the
    program ends as natively."""
    s = FastTrace(e2e, CALLOUT)
    listing = s.gdb("x/12i through", connect=False).of("x/12i through")
    call = hex_value(listing, r"(?m)^\s*0x([0-9a-f]+) <through\+\d+>:\s+call\s+\*%r\w+$")
    first = ("maint packet QTinit", f"maint packet QTDP:1:{call:x}:E:0:0:F2", "maint packet QTStart")
    elsewhere = ("maint packet QTinit", 'eval "maint packet QTDP:1:%lx:E:0:0:F1", &spare', "maint packet QTStart")
    maps = f"shell cat /proc/{s.pid}/maps"
    r = s.gdb(
        *TO_MAIN, *first, "break callee", "continue", maps,
        "maint packet QTStop", *elsewhere, maps, "maint packet QTStop",
        "continue", *elsewhere, maps, "delete", "break finished", "continue", "tstatus", "continue",
    )
    assert r.replies(*first) == ["OK"] * 3
    r.stopped_at(1, r"^Breakpoint 2, callee \(\)")
    r.stopped_at(2, r"^Breakpoint 2, callee \(\)")
    pads = [pad_ranges(r.of(maps, k)) for k in range(3)]
    size = [sum(hi - lo for lo, hi in p) for p in pads]
    assert size[0] > 0, r.of(maps, 0)
    # The first run's pads kept (the thread returns into one), the second run's in a new page.
    assert size[1] > size[0], pads
    # callee() has returned: nothing is in the old pads any more, and they are reused.
    assert size[2] == size[1], pads
    r.stopped_at(3, r"^Breakpoint 3, finished \(\)")
    assert r.status().collected == 1, r.status()  # spare(), through the reused pad
    s.ends_as_natively(r.of("continue", 4))
