"""Static tracepoints at SystemTap SDT markers: `info static-tracepoint-markers`, `strace`,
`collect $_sdata` (the marker's arguments) and the marker semaphores.

sdt_markers.c: main calls step(i) for i = 0..N-1; step() has the marker tpagent_test:step
(arguments i, i * 1234567890123, &total, the global counter = 2 * (i + 1), the constant 7) and
tpagent_test:guarded (argument i), which fires only while its semaphore is raised. Given a
library's path, it then dlopen()s libsdt_lib.so and calls lib_step(i) N times (marker
sdt_lib:lib_step, argument n). It links libstdc++, whose markers (libstdcxx:throw...) every
C++ program has. Prints "total=T guarded=G lib=L".

gdb 13.1's own limits, met here and avoided: `strace LOCATION` aborts gdb when the target
reports a marker there (the marker id is written into a tracepoint still under
construction), except for a pending one resolved later; `strace -m ID` works, but gdb names
the marker "alified" in its message and fails to re-set the tracepoint after a library
loads (it keeps the tracepoint where it was).
"""

import re

import pytest

from scenario import TO_MAIN, Scenario, assert_session_works, past_gdb_strace_m_crashes, symbol_addresses

PROGRAM = "sdt_markers"


def strace(location: str, *actions: str) -> tuple[str, ...]:
    return (f"strace {location}", "actions", *actions, "end")


def scenario(e2e, *args: str, library: bool = False, options: tuple[str, ...] = ()) -> Scenario:
    """sdt_markers with ARGS, then the library's path if LIBRARY; OPTIONS for the server."""
    program, lib = e2e.programs.with_sdt_markers()
    return Scenario(e2e, PROGRAM, *args, *([str(lib)] if library else []), program=program, options=options)


def test_markers_of_the_program_and_its_libraries_are_listed(e2e):
    """info static-tracepoint-markers: the program's markers with their source lines and
    argument descriptions (Data), and libstdc++'s."""
    s = scenario(e2e)
    r = s.gdb(*TO_MAIN, "info static-tracepoint-markers")
    listing = r.of("info static-tracepoint-markers")
    step = re.search(
        r"tpagent_test:step\s+n\s+(0x[0-9a-f]+) in step at \S*sdt_markers\.c:(\d+)\n\s+Data: \"(.*)\"",
        listing,
    )
    assert step, listing
    assert int(step.group(2)) == s.line("step")
    # i and big are locals (-O0), &total and counter go through registers, 7 is a constant
    assert re.fullmatch(r"-4@\S+ -8@\S+ 8@%r\w+ -4@\S+ -4@\$7", step.group(3)), step.group(3)
    assert re.search(r"tpagent_test:guarded\s+n\s+0x[0-9a-f]+ in step", listing), listing
    assert re.search(r"libstdcxx:throw\s+n\s+0x[0-9a-f]+", listing), listing


@pytest.mark.parametrize("collector", ["pad", "trap"])
def test_strace_collects_the_marker_arguments_and_raises_its_semaphore(e2e, collector):
    """strace -m at two markers, collect $_sdata: each hit's arguments as text, in hit order;
    the guarded marker fires only while the trace runs (its semaphore raised), and its
    semaphore is back to 0 after tstop. The same frames whether the step marker is collected
    by the in-process agent from a pad (its 1-byte nop and the instructions after it
    displaced) or through a trap (--no-inject: no agent); the guarded marker, at the end of
    step() where its window would take in the return, always through a trap."""
    iterations = 5

    def run():
        s = scenario(e2e, str(iterations), options=("--no-inject",) if collector == "trap" else ())
        define = s.define(
            strace("-m tpagent_test:step", "collect $_sdata"),
            strace("-m tpagent_test:guarded", "collect $_sdata"),
        )
        return s, s.gdb(
            *TO_MAIN, define, "break finished", "print/x &total", "tstart", "monitor tracepoints",
            "print tpagent_test_guarded_semaphore", "continue", "print tpagent_test_guarded_semaphore",
            "tstop", "print tpagent_test_guarded_semaphore", "tstatus", "tfind start",
            "print $_sdata", "tfind", "print $_sdata", "tfind 8", "print $_sdata", "tfind 9",
            "print $_sdata", "tfind none", "delete", "continue",
        )
    s, r = past_gdb_strace_m_crashes(run)
    r.trace_stopped("by a tstop command", 2 * iterations)
    how = r.of("monitor tracepoints")
    step = r"jumps to its pad" if collector == "pad" else r"is collected through a trap .*not loaded"
    assert re.search(rf"^Static tracepoint 2 at 0x[0-9a-f]+ {step}", how, re.M), how
    assert re.search(r"^Static tracepoint 3 at 0x[0-9a-f]+ is collected through a trap", how, re.M), how
    assert r.value("print tpagent_test_guarded_semaphore") == "1"
    assert r.value("print tpagent_test_guarded_semaphore", 1) == "1"
    assert r.value("print tpagent_test_guarded_semaphore", 2) == "0"
    total = r.value("print/x &total").split()[-1]
    assert r.found("tfind start") == (0, 2)
    assert r.value("print $_sdata") == f'"arg1=0 arg2=0 arg3={total} arg4=2 arg5=7"'
    assert r.found("tfind") == (1, 3)
    assert r.value("print $_sdata", 1) == '"arg1=0"'
    assert r.found("tfind 8") == (8, 2)
    assert r.value("print $_sdata", 2) == f'"arg1=4 arg2={4 * 1234567890123} arg3={total} arg4=10 arg5=7"'
    assert r.found("tfind 9") == (9, 3)
    assert r.value("print $_sdata", 3) == '"arg1=4"'
    s.exited(r.of("continue", 2), 0)
    s.server.wait_for(rf"total=10 guarded={iterations} lib=0")


def test_strace_in_a_library_loaded_during_the_run(e2e):
    """A pending static tracepoint at the marker's line in a library the program loads with
    dlopen during the run: gdb resolves it when the library loads and the target probes the
    marker from then on."""
    iterations = 3
    s = scenario(e2e, str(iterations), library=True)
    line = s.e2e.line("sdt_lib", "lib_step")
    define = s.define(strace(f"sdt_lib.c:{line}", "collect $_sdata"))
    r = s.gdb(
        "set breakpoint pending on", *TO_MAIN, define, "break finished", "tstart", "continue",
        "info static-tracepoint-markers", "tstop", "tstatus", "tfind start", "print $_sdata",
        "tfind 2", "print $_sdata", "tfind none", "delete", "continue",
    )
    assert "Static tracepoint 2 (sdt_lib.c" in r.of(define) and "pending" in r.of(define)
    assert re.search(r"sdt_lib:lib_step\s+y\s+0x[0-9a-f]+ in lib_step .*\n.*\n\s+Probed by static tracepoints: #2",
                     r.of("info static-tracepoint-markers")), r.of("info static-tracepoint-markers")
    r.trace_stopped("by a tstop command", iterations)
    assert r.value("print $_sdata") == '"arg1=0"'
    assert r.value("print $_sdata", 1) == '"arg1=2"'
    s.exited(r.of("continue", 2), 0)
    s.server.wait_for(r"total=3 guarded=0 lib=6")


def test_a_static_tracepoint_needs_a_marker_at_its_address(e2e):
    """QTDP :S where no marker is: tstart says so and the session goes on; at the marker it
    starts. qTSTMat finds a marker by its exact address only."""
    s = scenario(e2e)
    with s.raw() as rsp:
        listing = rsp.request("qTfSTM")
        while not listing.endswith("l"):
            listing += "," + rsp.request("qTsSTM")
        markers = {
            bytes.fromhex(m.split(":")[1]).decode(): int(m.split(":")[0], 16)
            for m in re.findall(r"[0-9a-f]+:[0-9a-f]+:[0-9a-f]*", listing)
        }
        step = markers["tpagent_test:step"]
        assert rsp.request(f"qTSTMat:{step:x}").startswith(f"m{step:x}:")
        assert rsp.request(f"qTSTMat:{step + 1:x}") == "l"
        main = symbol_addresses(s.program, s.pid)["main"]
        assert rsp.request("QTinit") == "OK"
        assert rsp.request(f"QTDP:1:{main:016x}:E:0:0:S") == "OK"
        reply = rsp.request("QTStart")
        assert reply.startswith("E.") and f"no static tracepoint marker at 0x{main:x}" in reply, reply
        assert_session_works(rsp)
        assert rsp.request("QTinit") == "OK"
        assert rsp.request(f"QTDP:2:{step:016x}:E:0:0:S") == "OK"
        # Stopped at the program's entry, before its C library is loaded: the in-process
        # agent's image goes in all the same, and the tracepoint gets its jump (tstart says
        # nothing).
        reply, said = rsp.request_noisy("QTStart")
        assert reply == "OK", reply
        assert said == "", said
        assert rsp.request("QTStop") == "OK"
        assert_session_works(rsp)


def test_a_static_tracepoint_enabled_during_the_run_probes_its_marker(e2e):
    """A static tracepoint disabled at tstart and enabled during the run: its marker's
    semaphore goes up then, and its hits collect $_sdata."""
    iterations = 4

    def run():
        s = scenario(e2e, str(iterations))
        define = s.define(strace("-m tpagent_test:guarded", "collect $_sdata"), "disable 2")
        return s, s.gdb(
            *TO_MAIN, define, "break finished", "tstart", "print tpagent_test_guarded_semaphore",
            "enable 2", "print tpagent_test_guarded_semaphore", "continue", "tstop", "tstatus",
            "tfind 3", "print $_sdata", "tfind none", "print tpagent_test_guarded_semaphore",
        )
    _, r = past_gdb_strace_m_crashes(run)
    assert r.value("print tpagent_test_guarded_semaphore") == "0"
    assert r.value("print tpagent_test_guarded_semaphore", 1) == "1"
    r.trace_stopped("by a tstop command", iterations)
    assert r.value("print $_sdata") == '"arg1=3"'
    assert r.value("print tpagent_test_guarded_semaphore", 2) == "0"
