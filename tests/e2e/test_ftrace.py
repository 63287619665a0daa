"""Fast tracepoints (ftrace): a jump to a pad in the preloaded in-process agent library
collects in the program itself, without stopping it.

The program is started through "--wrapper env LD_PRELOAD=LIB --": LIB is gdbserver's
/usr/lib/libinproctrace.so, or tpagent's libtpagent-inproc.so ($TPAGENT_INPROC_LIB, else
the one next to the tpagent binary). gdb runs the program to main first, so the library is
loaded before tstart; breakpoint 1 is gone and tracepoints are numbered from 2.

gdbserver's jump pads live in the low 2 GiB, out of a 32-bit jump's reach from PIE code
and shared libraries, so the programs checked against it are built -fno-pie -no-pie; the
PIE and shared-library tests are tpagent's own. programs/ftrace_loop.c: traced(i, 3) and
leaf(i) once per iteration, every collected value follows from i (see the file).
"""

import re

import pytest

import shared
from harness import assert_in_order, hex_value
from scenario import (
    TO_MAIN,
    TO_THE_END,
    FastTrace,
    Scenario,
    agent_library,
    dumped_bytes,
    examined_bytes,
    ftrace,
    trace_to,
    tracepoint_address,
)

PROGRAM = "ftrace_loop"


# --------------------------------------------------------------------------- registers and globals


def check_registers_and_globals(e2e, pie: bool) -> None:
    """ftrace traced: each of 5 hits records the registers (rdi = the iteration, rsi = 3)
    and the globals as the previous call left them."""
    s = FastTrace(e2e, PROGRAM, "5", pie=pie)
    define = s.define(ftrace("traced", "collect $regs", "collect hits, current"))
    walk = s.walk("$rdi", "$rsi", "$rip", "hits", "current.id", "current.square")
    r = s.gdb(
        *TO_MAIN, define, *trace_to("finished"),
        "tfind start", "tdump", "print untouched", "info registers rip",
        "tfind 3", "print $rdi", "print current",
        walk,
    )
    tp = tracepoint_address(r.of(define), 2, fast=True, source=PROGRAM, line=s.line("traced_entry"))
    r.stopped_at(1, r"Breakpoint 3, finished \(\)")
    r.trace_stopped("by a tstop command", 5)

    assert r.found("tfind start") == (0, 2)
    r.dumped(
        2, 0,
        r"^rsi\s+0x3\s+3$",
        r"^rdi\s+0x0\s+0$",
        rf"^rip\s+0x{tp:x}\s+0x{tp:x} <traced\+\d+>$",
        r"^hits = 0$",
        r'^current = \{id = 0, square = 0, tag = "ftrace\\000"\}$',
    )
    assert r.value("print untouched") == "<unavailable>"
    assert hex_value(r.of("info registers rip"), r"(?m)^rip\s+0x([0-9a-f]+)\s") == tp
    assert r.found("tfind 3") == (3, 2)
    assert r.value("print $rdi") == "3"
    assert r.value("print current") == '{id = 2, square = 4, tag = "ftrace\\000"}'

    # Frame k: traced(k, 3), called after traced(k - 1) set current.
    expected = [(k, 2, k, 3, tp, k, max(k - 1, 0), max(k - 1, 0) ** 2) for k in range(5)]
    assert r.frames(walk) == expected, r.of(walk)


def test_registers_and_globals_non_pie(e2e):
    check_registers_and_globals(e2e, pie=False)


@pytest.mark.tpagent_only("gdbserver's jump pads are too far from PIE code")
def test_registers_and_globals_pie(e2e):
    check_registers_and_globals(e2e, pie=True)


@pytest.mark.tpagent_only("gdbserver's jump pads are too far from shared libraries")
def test_shared_library(e2e):
    shared.fast_shared_library(FastTrace(e2e, "ftrace_shlib", "6", program=e2e.programs.with_library()), shared.X86_64)


@pytest.mark.tpagent_only("gdbserver's jump pads are too far from PIE code and shared libraries")
@pytest.mark.parametrize("where", ["pie", "shared_library"])
def test_frames_read_the_program_image(e2e, where):
    """As on arm64 (tests/arm64): a fast frame of a PIE or a library shows its arguments and
    locals with no setting beyond the sysroot, and its code reads as the program's."""
    if where == "shared_library":
        s = FastTrace(e2e, "ftrace_shlib", "4", program=e2e.programs.with_library())
        shared.fast_frame_reads_the_program_image(s, "library")
    else:
        shared.fast_frame_reads_the_program_image(FastTrace(e2e, PROGRAM, "4", pie=True), "program")


# --------------------------------------------------------------------------- what is collected, when


def test_condition_locals_and_memory(e2e):
    shared.fast_condition_locals_and_memory(FastTrace(e2e, PROGRAM, "10"))


@pytest.mark.tpagent_only("gdbserver's in-process agent leaves trace state variables at their initial values")
def test_trace_state_variables(e2e):
    """teval in a fast tracepoint's actions: each frame holds the variables as that hit
    left them, and the target's current values are the last hit's."""
    s = FastTrace(e2e, PROGRAM, "6")
    define = s.define(
        "tvariable $calls = 0",
        "tvariable $sum = 100",
        ftrace("traced", "teval $calls = $calls + 1", "teval $sum = $sum + n", "collect $calls, $sum"),
    )
    walk = s.walk("$calls", "$sum")
    r = s.gdb(*TO_MAIN, define, *trace_to("finished", tstatus=False), "info tvariables", "tfind 3", "tdump", walk)
    assert re.search(r"^\$calls\s+0\s+6\s*$", r.of("info tvariables"), re.M), r.of("info tvariables")
    assert re.search(r"^\$sum\s+100\s+115\s*$", r.of("info tvariables"), re.M), r.of("info tvariables")
    r.dumped(2, 3, r"^\$calls = 4$", r"^\$sum = 106$")
    expected = [(k, 2, k + 1, 100 + k * (k + 1) // 2) for k in range(6)]
    assert r.frames(walk) == expected, r.of(walk)


def test_passcount(e2e):
    """passcount 5: the fifth hit stops the trace; the program runs on untraced."""
    s = FastTrace(e2e, PROGRAM, "10")
    define = s.define(ftrace("traced", "collect n"), "passcount 5 2")
    r = s.gdb(
        *TO_MAIN, define, "break finished", "info tracepoints 2", "tstart", "continue", "tstatus",
        "tfind 4", "print n", "tfind", "tfind none", "print hits",
    )
    assert_in_order(r.of("info tracepoints 2"), r"^\s+collect n$", r"^\s+pass count 5 $")
    r.stopped_at(1, r"Breakpoint 3, finished \(\)")
    r.trace_stopped("by tracepoint 2", 5)
    assert r.found("tfind 4") == (4, 2)
    assert r.value("print n") == "4"
    assert r.found("tfind") is None
    assert r.value("print hits") == "10"


@pytest.mark.tpagent_only("gdbserver's jump pad pushes registers over a leaf function's red zone")
def test_leaf_function_red_zone(e2e):
    """leaf() calls nothing, so its locals are in the red zone below rsp: the pad must not
    write there, neither in the frames (locals as the program set them) nor in the program
    (which still gets its checksum right)."""
    s = FastTrace(e2e, PROGRAM, "6")
    define = s.define(ftrace(s.at("leaf_late"), "collect n, $locals"))
    walk = s.walk("n", "doubled", "tripled")
    r = s.gdb(*TO_MAIN, define, *trace_to("finished", tstatus=False), "print result", walk, *TO_THE_END)
    assert r.frames(walk) == [(n, 2, n, 2 * n, 3 * n) for n in range(6)], r.of(walk)
    checksum = int(re.match(r"checksum=(-?\d+) ", s.reference.stdout).group(1))
    assert r.value("print result") == str(checksum)
    s.exits_as_natively(r.of("continue", 2))


# --------------------------------------------------------------------------- threads


def test_four_threads(e2e):
    shared.fast_four_threads(FastTrace(e2e, "ftrace_threads"), shared.X86_64)


# --------------------------------------------------------------------------- the program's code afterwards


def test_program_runs_on_after_tstop(e2e):
    """tstop halfway: the jump goes and the original instruction is back (the same bytes as
    before tstart), and the rest of the run, untraced, gives the same checksum as a run
    without any debugger.

    The code is read both through the server (x/8xb) and, by a shell command, straight
    from /proc/PID/mem, which shows the jump while the trace runs: a server may hide its
    own code changes from gdb's reads."""
    s = FastTrace(e2e, PROGRAM, "10")
    define = s.define(ftrace("traced", "collect n"))
    where = "info tracepoints 2"  # leaves the tracepoint's address in $_
    direct = s.read_code("$_")
    r = s.gdb(
        *TO_MAIN, define, where, direct, "x/8xb $_",
        *trace_to("halfway", tstop=False, tstatus=False), where, direct,
        "tstop", "tstatus", where, direct, "x/8xb $_",
        "delete", "continue",
    )
    tp = tracepoint_address(r.of(define), 2, fast=True, source=PROGRAM)
    before, during, after = (dumped_bytes(r.of(direct, n)) for n in range(3))
    through_server = [r.of("x/8xb $_", n) for n in range(2)]
    assert through_server[0].startswith(f"0x{tp:x} <traced+"), through_server[0]
    assert examined_bytes(through_server[0]) == before, (through_server[0], before)
    # The line's first instruction is mov 0x...(%rip),%eax (see ftrace_loop.c).
    assert before[:2] == [0x8B, 0x05], before
    assert during[0] == 0xE9, (before, during)  # jmp rel32, to the jump pad
    assert after == before, (before, after)
    assert through_server[1] == through_server[0]
    r.stopped_at(1, r"Breakpoint 3, halfway \(\)")
    assert r.status().collected == 5, r.status()
    s.ends_as_natively(r.of("continue", 2))


# --------------------------------------------------------------------------- trace files


def run_and_save(e2e, *save_commands: str) -> FastTrace:
    s = FastTrace(e2e, PROGRAM, "6")
    define = s.define(ftrace(s.at("traced_late"), "collect $regs, $locals, n, current, bytes"))
    live = s.trace_and_save(define, *save_commands)
    for command in save_commands:
        assert live.of(command).strip() == "", live  # gdb -batch says nothing on success
    return s


VIEW = ("tstatus", "info tracepoints", "tfind 3", "tdump", "print bytes", "tfind", "tfind", "tfind", "tfind end")


def view(s: Scenario, trace_file):
    """A new gdb reads the trace file (non-PIE: the symbols need no offset)."""
    assert trace_file.read_bytes().startswith(b"\x7fTRACE0\n")
    return s.open_trace_file(trace_file, *VIEW)


def check_view(r) -> None:
    assert (r.status().file, r.status().collected) == (True, 6), r.status()
    assert_in_order(
        r.of("info tracepoints"),
        r"^1\s+fast tracepoint\s+keep y\s+0x[0-9a-f]+ in traced at .*ftrace_loop\.c:\d+$",
    )
    assert r.found("tfind 3") == (3, 1)
    r.dumped(
        1, 3,
        r"^rip\s+0x[0-9a-f]+\s+0x[0-9a-f]+ <traced\+\d+>$",
        r"^squared = 9$",
        rf"^product = {shared.ftrace_mix(27)}$",
        r"^n = 3$",
        r'^current = \{id = 3, square = 9, tag = "ftrace\\000"\}$',
        r'^bytes = "0123456789:;<=>\?"$',
    )
    assert r.value("print bytes") == '"0123456789:;<=>?"'
    assert [r.found("tfind", n) for n in range(3)] == [(4, 1), (5, 1), None]


def test_tsave_and_tfile(e2e):
    """gdb's tsave pulls the fast tracepoint's frames into a file a new gdb reads."""
    trace_file = e2e.tmp / "host.tf"
    r = view(run_and_save(e2e, f"tsave {trace_file}"), trace_file)
    assert_in_order(
        r.of(f"target tfile {trace_file}"),
        r"Created tracepoint 1 for target's tracepoint 2 at 0x[0-9a-f]+\.",
    )
    check_view(r)


@pytest.mark.tpagent_only("gdbserver does not implement QTSave (tsave -r)")
def test_tsave_r_reads_like_gdbs_own_file(e2e):
    ours, theirs = e2e.tmp / "target.tf", e2e.tmp / "host.tf"
    s = run_and_save(e2e, f"tsave -r {ours}", f"tsave {theirs}")
    a, b = view(s, ours), view(s, theirs)
    check_view(a)
    assert {c: a.of(c) for c in VIEW} == {c: b.of(c) for c in VIEW}


# --------------------------------------------------------------------------- refusals and the agent option


def test_without_the_agent_library(e2e):
    """A program started without the library (and tpagent told not to load it): tstart
    refuses the fast tracepoint, and the session goes on (the program runs to its end,
    untraced)."""
    options = () if e2e.is_gdbserver else ("--no-inject",)
    s = Scenario(e2e, PROGRAM, "4", pie=False, options=options)
    define = s.define(ftrace("traced", "collect n"))
    r = s.gdb(*TO_MAIN, define, "tstart", "tstatus", "info registers rip", "continue")
    assert re.search(r"in-process agent", r.of("tstart"), re.I), r.of("tstart")
    assert not r.status().running, r.status()
    assert re.search(r"^rip\s+0x[0-9a-f]+\s+0x[0-9a-f]+ <main\+\d+>$", r.of("info registers rip"), re.M), r
    s.exits_as_natively(r.of("continue", 1))


@pytest.mark.tpagent_only("gdbserver traces fast only in a program started with its library")
def test_without_the_agent_library_tpagent_loads_it(e2e):
    """A program started without the library: tstart places the agent's image in the program,
    every call is a frame, and the program ends as natively."""
    s = Scenario(e2e, PROGRAM, "4")
    define = s.define(ftrace("traced", "collect n"))
    r = s.gdb(*TO_MAIN, define, *trace_to("finished"), "tfind 3", "print n", "tfind none", "continue")
    assert r.of("tstart").strip() == "", r.of("tstart")
    r.trace_stopped("by a tstop command", 4)
    assert r.found("tfind 3") == (3, 2)
    assert r.value("print n") == "3"
    s.exits_as_natively(r.of("continue", 2))


@pytest.mark.tpagent_only("gdbserver silently ignores while-stepping on fast tracepoints")
def test_while_stepping_refused(e2e):
    """gdb itself will not put while-stepping on an ftrace, so the definition is sent raw:
    fast tracepoint 1 with step count 2. The target refuses it (at QTStart, or already at
    QTDP) naming while-stepping, and the session goes on."""
    s = FastTrace(e2e, PROGRAM, "4")
    # Fast tracepoint 1 at $_ (F6: a 6-byte instruction), step count 2; then its one
    # action, a while-stepping one (S) collecting register 16, rip.
    sent = (
        "maint packet QTinit",
        'eval "maint packet QTDP:1:%lx:E:2:0:F6-", $_',
        'eval "maint packet QTDP:-1:%lx:SR010000", $_',
        "maint packet QTStart",
    )
    r = s.gdb(
        *TO_MAIN,
        f"info line {s.at('traced_entry')}",  # leaves the line's address in $_
        *sent,
        "x/2i $_", "tstatus", "info registers rip", "break finished", "continue",
    )
    addresses = [int(a, 16) for a in re.findall(r"^(?:=> )?\s*0x([0-9a-f]+) <traced\+\d+>:", r.of("x/2i $_"), re.M)]
    assert len(addresses) == 2 and addresses[1] - addresses[0] == 6, r.of("x/2i $_")
    replies = r.replies(*sent[1:])
    refusals = [reply for reply in replies if reply != "OK"]
    assert refusals and refusals[0].startswith("E") and "while-stepping" in refusals[0], replies
    assert replies[-1] != "OK", replies
    assert not r.status().running, r.status()
    assert re.search(r"^rip\s+0x[0-9a-f]+\s+0x[0-9a-f]+ <main\+\d+>$", r.of("info registers rip"), re.M), r
    r.stopped_at(1, r"Breakpoint 2, finished \(\)")


def check_one_frame_of_n_0(r) -> None:
    assert r.status().collected == 1, r.status()
    assert r.found("tfind start") == (0, 2)
    assert r.value("print n") == "0"


@pytest.mark.tpagent_only("--inproc is tpagent's option")
def test_inproc_option(e2e):
    """tpagent --inproc preloads the library next to its binary into the program it starts."""
    s = FastTrace(e2e, PROGRAM, "1", agent=False, options=("--inproc",))
    define = s.define(ftrace("traced", "collect n"))
    check_one_frame_of_n_0(s.gdb(*TO_MAIN, define, *trace_to("finished"), "tfind start", "print n"))


def test_agent_through_gdb_set_environment(e2e):
    """Extended-remote: gdb's `set environment LD_PRELOAD=...` reaches the program started by
    `run` (QEnvironmentHexEncoded), so the agent loads without a server option."""
    s = FastTrace.multi(e2e, PROGRAM, pie=False)
    define = s.define(ftrace("traced", "collect n"))
    r = s.gdb(
        s.exec_file, f"set environment LD_PRELOAD={agent_library(e2e)}", "break main", "run 1", "delete",
        define, *trace_to("finished"), "tfind start", "print n",
    )
    check_one_frame_of_n_0(r)
