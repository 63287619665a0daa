"""Fast tracepoints in programs whose loader cannot take the in-process agent's library, or
must not be called: tpagent places the agent's self-mapped image (libtpagent-inproc-image.so:
no C library, no loader, no TLS) in the program itself at tstart.

programs/ftrace_loop.c built as a static glibc program, a dynamic and a static musl one
(musl-gcc, Debian's musl-tools; skipped without it); programs/ftrace_malloc_lock.c: another
thread holds glibc's malloc lock for good when tstart places the agent.
"""

import re
import shutil
import time

import pytest

from harness import compile_program
from scenario import TO_MAIN, TO_THE_END, Scenario, ftrace, trace_to, tracepoint_address

pytestmark = pytest.mark.tpagent_only("gdbserver traces fast only with libinproctrace.so preloaded")

PROGRAM = "ftrace_loop"
IMAGE = "libtpagent-inproc-image.so"
# Variant -> the compiler and its flags.
VARIANTS = {
    "glibc_static": ("cc", "-static"),
    "musl_dynamic": ("musl-gcc",),
    "musl_static": ("musl-gcc", "-static"),
}


def build(e2e, variant: str):
    compiler, *flags = VARIANTS[variant]
    if shutil.which(compiler) is None:
        pytest.skip(f"{compiler} is missing (Debian's musl-tools)")
    return compile_program(e2e.programs.source(PROGRAM), e2e.tmp / f"{PROGRAM}_{variant}", *flags,
                           compiler=compiler)


@pytest.mark.parametrize("variant", VARIANTS)
def test_values_in_tfind_and_in_a_tsave_r_file(e2e, variant):
    """Each of 5 calls of traced(i, 3) is a frame holding the registers (rdi = i, rsi = 3,
    rip the tracepoint) and the globals as the previous call left them, in tfind and in a
    `tsave -r` file a new gdb reads; the agent is the image; the program ends as natively."""
    program = build(e2e, variant)
    s = Scenario(e2e, PROGRAM, "5", program=program, options=("--debug",))  # (what it placed)
    trace_file = e2e.tmp / f"{variant}.tf"
    define = s.define(ftrace("traced", "collect $regs", "collect hits, current"))
    walk = s.walk("$rdi", "$rsi", "$rip", "hits", "current.id", "current.square")
    r = s.gdb(*TO_MAIN, define, *trace_to("finished"), walk, "print/x &hits",
              f"tsave -r {trace_file}", *TO_THE_END)
    assert r.of("tstart").strip() == "", r.of("tstart")
    tp = tracepoint_address(r.of(define), 2, fast=True, source=PROGRAM)
    r.trace_stopped("by a tstop command", 5)
    expected = [(k, 2, k, 3, tp, k, max(k - 1, 0), max(k - 1, 0) ** 2) for k in range(5)]
    assert r.frames(walk) == expected, r.of(walk)
    assert r.of(f"tsave -r {trace_file}").strip() == "", r.of(f"tsave -r {trace_file}")
    s.ends_as_natively(r.of("continue", 2))
    # glibc's and musl's TCB starts with a pointer to itself: the image's one-load thread lookup.
    s.server.wait_for(r"thread pointer by load at it$")

    # (The file's tracepoint is gdb's 1 when gdb can read the code at its address, as for a
    # non-PIE program; else it stays the target's 2: the values are what matters.)
    saved = s.open_trace_file(trace_file, walk, live=r)
    rows = [(k, *rest) for k, _, *rest in saved.frames(walk)]
    assert rows == [(k, *rest) for k, _, *rest in expected], saved.of(walk)


def sigtrap_caught(status: str) -> bool:
    """Whether /proc/PID/status text says SIGTRAP (5) has a handler."""
    caught = int(re.search(r"^SigCgt:\s*([0-9a-f]+)$", status, re.M).group(1), 16)
    return bool(caught & (1 << (5 - 1)))


def test_the_image_is_what_is_placed(e2e):
    """The program gets the image mapped (named in /proc/PID/maps), not the library, and, as
    with the library, a SIGTRAP handler for the breakpoints a killed tpagent leaves behind."""
    program = build(e2e, "musl_static")
    s = Scenario(e2e, PROGRAM, "3", program=program)
    r = s.gdb(*TO_MAIN, "info proc status", s.define(ftrace("traced", "collect n")), "tstart",
              "info proc mappings", "info proc status")
    assert r.of("tstart").strip() == "", r.of("tstart")
    mappings = r.of("info proc mappings")
    assert re.search(rf"/{re.escape(IMAGE)}$", mappings, re.M), mappings
    assert "libtpagent-inproc.so" not in mappings, mappings
    assert not sigtrap_caught(r.of("info proc status", 0)), r.of("info proc status", 0)
    assert sigtrap_caught(r.of("info proc status", 1)), r.of("info proc status", 1)


def test_another_thread_holding_the_malloc_lock(e2e):
    """A thread blocked for good inside malloc_stats(), the arena locked, when tstart places
    the agent: nothing in the placement waits on it (the program's dlopen would, 10 s, and
    fail), and every call is collected."""
    s = Scenario(e2e, "ftrace_malloc_lock", "5")
    define = s.define(ftrace("traced", "collect n, sum"))
    walk = s.walk("n", "sum")
    begun = time.monotonic()
    r = s.gdb("break locked", "continue", "delete", define, "tstart", "break finished", "continue",
              "tstop", "tstatus", walk, *TO_THE_END)
    took = time.monotonic() - begun
    assert r.of("tstart").strip() == "", r.of("tstart")
    assert took < 8, f"the session took {took:.1f} s"
    sums = [sum(j * j for j in range(k)) for k in range(5)]
    assert r.frames(walk) == [(k, 2, k, sums[k]) for k in range(5)], r.of(walk)
    s.exited(r.of("continue", 2), sum(k * k for k in range(5)) % 251)


@pytest.mark.parametrize("variant", ["glibc_static", "musl_static"])
def test_threads_that_come_and_go(e2e, variant):
    """200 short-lived threads, each calling traced(n) once: every call is a frame with its n,
    the later threads taking over the table entries of ended ones whose thread pointer they
    get; the program ends as natively."""
    compiler, *flags = VARIANTS[variant]
    if shutil.which(compiler) is None:
        pytest.skip(f"{compiler} is missing (Debian's musl-tools)")
    source = e2e.programs.source("ftrace_thread_churn")
    program = compile_program(source, e2e.tmp / f"churn_{variant}", *flags, compiler=compiler)
    s = Scenario(e2e, "ftrace_thread_churn", "50", program=program)
    walk = s.walk("n")
    r = s.gdb(*TO_MAIN, s.define(ftrace("traced", "collect n")), *trace_to("finished"), walk,
              *TO_THE_END)
    assert r.of("tstart").strip() == "", r.of("tstart")
    r.trace_stopped("by a tstop command", 200)
    assert sorted(n for _, _, n in r.frames(walk)) == list(range(200)), r.of(walk)
    s.exits_as_natively(r.of("continue", 2))
