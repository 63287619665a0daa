"""A trace that stops itself from inside a hit of a trap tracepoint -- its pass count
reached, or a linear buffer full -- removes the tracepoint while the hitting thread is
stopped on it. That thread (and any other one already trapped there) must go on with the
original instruction, exactly once: the program's own results stay right.

passcount.c: main calls traced(i) ITERATIONS times (or THREADS threads do, at once);
traced() counts its calls in `hits`, adds i to `total`, fills the 1024-byte `block` and
returns i * factor; the program prints "hits=H total=T sum=S right" (or "WRONG") and exits
with 0 when every value is right. The tracepoint's instruction loads `factor`: resumed
one byte into it, a thread computes a wrong product. Breakpoint 1 took gdb to main, so
the tracepoint is number 2.
"""

from scenario import TO_MAIN, Scenario, trace

PROGRAM = "passcount"


def program_right(s: Scenario, text: str, iterations: int, threads: int = 1) -> None:
    """The program ran to its end and says its values are right."""
    each = iterations * (iterations - 1) // 2
    hits, total, total_sum = threads * iterations, threads * each, 3 * threads * each
    s.exited(text, 0)
    s.server.wait_for(rf"hits={hits} total={total} sum={total_sum} right")


def test_passcount_stop_leaves_the_program_right(e2e):
    """passcount 5: the fifth hit stops the trace (tracepoint removed during that hit); the
    fifth call and the five after it run as if never traced."""
    s = Scenario(e2e, PROGRAM, "10")
    define = s.define(trace("traced", "collect n"), "passcount 5 2")
    r = s.gdb(
        *TO_MAIN, define, "break finished", "tstart", "continue", "tstatus",
        "print hits", "print total", "tfind 4", "print n", "tfind none", "delete", "continue",
    )
    r.stopped_at(1, r"Breakpoint 3, finished \(\)")
    r.trace_stopped("by tracepoint 2", 5)
    assert r.value("print hits") == "10"
    assert r.value("print total") == "45"
    assert r.found("tfind 4") == (4, 2)
    assert r.value("print n") == "4"
    program_right(s, r.of("continue", 2), 10)


def test_full_buffer_stop_leaves_the_program_right(e2e):
    """A linear buffer of 8 KiB, 1 KiB collected per hit: a hit that finds the buffer full
    stops the trace (tfull) and removes the tracepoint; the program runs on untraced."""
    iterations, buffer_size = 50, 8192
    s = Scenario(e2e, PROGRAM, str(iterations))
    define = s.define(trace("traced", "collect n, block"))
    r = s.gdb(
        *TO_MAIN, define, f"set trace-buffer-size {buffer_size}", "set circular-trace-buffer off",
        "break finished", "tstart", "continue", "tstatus", "print hits", "print total",
        "tfind start", "print n", "print block[1023]", "tfind none", "delete", "continue",
    )
    r.stopped_at(1, r"Breakpoint 3, finished \(\)")
    assert r.status().stopped == "because the buffer was full", r.status()
    assert 1 < r.status().collected < iterations, r.status()
    assert r.value("print hits") == str(iterations)
    assert r.value("print total") == str(iterations * (iterations - 1) // 2)
    assert r.found("tfind start") == (0, 2)
    assert r.value("print n") == "0"
    assert r.value("print block[1023]") == "0 '\\000'"  # before the first fill
    program_right(s, r.of("continue", 2), iterations)


def test_passcount_stop_with_threads_on_the_tracepoint(e2e):
    """Four threads call traced() 50 times each, together: when the fifth hit stops the
    trace, other threads may already have trapped on the tracepoint, or be on their way
    through its displaced instruction. Every one of them goes on correctly."""
    iterations, threads = 50, 4
    s = Scenario(e2e, PROGRAM, str(iterations), str(threads))
    define = s.define(trace("traced", "collect n"), "passcount 5 2")
    r = s.gdb(*TO_MAIN, define, "break finished", "tstart", "continue", "tstatus", "print hits", "delete", "continue")
    r.stopped_at(1, r"Breakpoint 3, finished \(\)")
    assert r.status().stopped == "by tracepoint 2" and r.status().collected >= 5, r.status()
    assert r.value("print hits") == str(iterations * threads)
    program_right(s, r.of("continue", 2), iterations, threads)
