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

import os
import re
import subprocess
from pathlib import Path

import pytest

from harness import PROGRAMS_DIR, assert_in_order, hex_value, printed_value

PROGRAM = "ftrace_loop"
TO_MAIN = ("break main", "continue", "delete")
GDBSERVER_AGENT = "/usr/lib/libinproctrace.so"


# --------------------------------------------------------------------------- programs


class FtracePrograms:
    """Builds programs/NAME.c the ways these tests need and harness.Programs does not:
    non-PIE, PIE, and linked against libftrace_lib.so (ftrace_lib.c) found by rpath."""

    def __init__(self, outdir: Path) -> None:
        self._outdir = outdir
        self._built: dict[tuple[str, bool], Path] = {}

    def _cc(self, output: Path, *args: str) -> Path:
        cmd = ["cc", "-g", "-O0", "-o", str(output), *args]
        result = subprocess.run(cmd, capture_output=True, text=True, timeout=120)
        if result.returncode != 0:
            raise RuntimeError(f"{' '.join(cmd)} failed:\n{result.stdout}{result.stderr}")
        return output

    def path(self, name: str, pie: bool = False) -> Path:
        key = (name, pie)
        if key not in self._built:
            source = PROGRAMS_DIR / f"{name}.c"
            flags = [] if pie else ["-fno-pie", "-no-pie"]
            if "<pthread.h>" in source.read_text():
                flags.append("-pthread")
            output = self._outdir / f"{name}{'-pie' if pie else '-nopie'}"
            self._built[key] = self._cc(output, *flags, str(source))
        return self._built[key]

    def with_library(self) -> Path:
        """ftrace_shlib (PIE) calling lib_traced() in libftrace_lib.so."""
        key = ("ftrace_shlib", True)
        if key not in self._built:
            self._cc(self._outdir / "libftrace_lib.so", "-fPIC", "-shared", str(PROGRAMS_DIR / "ftrace_lib.c"))
            self._built[key] = self._cc(
                self._outdir / "ftrace_shlib",
                str(PROGRAMS_DIR / "ftrace_shlib.c"),
                f"-L{self._outdir}",
                "-lftrace_lib",
                f"-Wl,-rpath,{self._outdir}",
            )
        return self._built[key]


@pytest.fixture(scope="module")
def builds(tmp_path_factory):
    return FtracePrograms(tmp_path_factory.mktemp("ftrace-programs"))


def agent_library(e2e) -> str:
    if e2e.is_gdbserver:
        return GDBSERVER_AGENT
    default = Path(e2e.server_bin.path).parent / "libtpagent-inproc.so"
    return os.environ.get("TPAGENT_INPROC_LIB") or str(default)


def serve_with_agent(e2e, program: Path, *args: str):
    """The server with PROG created, the agent library preloaded into it."""
    library = agent_library(e2e)
    assert Path(library).is_file(), f"no in-process agent library at {library}"
    return e2e.serve(program, *args, options=("--wrapper", "env", f"LD_PRELOAD={library}", "--"))


def native_run(program: Path, *args: str) -> subprocess.CompletedProcess:
    """The program run with no debugger: what it prints and exits with, untouched."""
    return subprocess.run([str(program), *args], capture_output=True, text=True, timeout=20)


def exited_with(text: str, pid: int, code: int) -> None:
    if code == 0:
        assert_in_order(text, rf"^\[Inferior 1 \(process {pid}\) exited normally\]$")
    else:
        # gdb prints the code in octal.
        assert_in_order(text, rf"^\[Inferior 1 \(process {pid}\) exited with code 0*{code:o}\]$")


# --------------------------------------------------------------------------- output


def gdb_tracing(e2e, *commands: str, program: Path):
    """e2e.gdb, checking that tstart said nothing: gdb warns "Target does not support fast
    tracepoints, downloading N as regular tracepoint" when the target lacks them."""
    r = e2e.gdb(*commands, program=program)
    assert r.of("tstart").strip() == "", r.of("tstart")
    return r


def fast_tracepoint_address(text: str, number: int, source: str = PROGRAM) -> int:
    return hex_value(text, rf"Fast tracepoint {number} at 0x([0-9a-f]+): file .*{source}\.c, line \d+\.")


def walk_frames(e2e, *expressions: str) -> str:
    """A command printing "frame N tp T: e1 e2 ..." (as %ld) for every frame, from the first."""
    values = " ".join("%ld" for _ in expressions)
    args = "".join(f", {e}" for e in expressions)
    return e2e.command_file(
        "tfind start",
        "while $trace_frame != -1",
        f'  printf "frame %d tp %d: {values}\\n", $trace_frame, $tracepoint{args}',
        "  tfind",
        "end",
    )


def frames_of(text: str) -> list[tuple[int, ...]]:
    """The walk_frames lines as tuples (frame, tracepoint, values...)."""
    rows = re.findall(r"^frame (\d+) tp (\d+): ([-\d ]*)$", text, re.M)
    return [(int(frame), int(tp), *map(int, vals.split())) for frame, tp, vals in rows]


def mix(v: int) -> int:
    """ftrace_loop.c's mix() (v is never negative here)."""
    return v ^ (v >> 3)


# --------------------------------------------------------------------------- registers and globals


def check_registers_and_globals(e2e, program: Path) -> None:
    """ftrace traced: each of 5 hits records the registers (rdi = the iteration, rsi = 3)
    and the globals as the previous call left them."""
    server = serve_with_agent(e2e, program, "5")
    entry = e2e.line(PROGRAM, "traced_entry")
    define = e2e.command_file("ftrace traced", "actions", "collect $regs", "collect hits, current", "end")
    walk = walk_frames(e2e, "$rdi", "$rsi", "$rip", "hits", "current.id", "current.square")
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
        "tfind start",
        "tdump",
        "print untouched",
        "info registers rip",
        "tfind 3",
        "print $rdi",
        "print current",
        walk,
        program=program,
    )
    tp = fast_tracepoint_address(r.of(define), 2)
    assert_in_order(r.of(define), rf"^Fast tracepoint 2 at 0x{tp:x}: file .*{PROGRAM}\.c, line {entry}\.$")
    assert_in_order(r.of("continue", 1), r"Breakpoint 3, finished \(\)")
    assert_in_order(r.of("tstatus"), r"^Trace stopped by a tstop command", r"^Collected 5 trace frames\.$")

    assert r.of("tfind start").startswith("Found trace frame 0, tracepoint 2\n"), r.of("tfind start")
    assert_in_order(
        r.of("tdump"),
        r"^Data collected at tracepoint 2, trace frame 0:$",
        r"^rsi\s+0x3\s+3$",
        r"^rdi\s+0x0\s+0$",
        rf"^rip\s+0x{tp:x}\s+0x{tp:x} <traced\+\d+>$",
        r"^hits = 0$",
        r'^current = \{id = 0, square = 0, tag = "ftrace\\000"\}$',
    )
    assert printed_value(r.of("print untouched")) == "<unavailable>"
    assert hex_value(r.of("info registers rip"), r"(?m)^rip\s+0x([0-9a-f]+)\s") == tp
    assert r.of("tfind 3").startswith("Found trace frame 3, tracepoint 2\n"), r.of("tfind 3")
    assert printed_value(r.of("print $rdi")) == "3"
    assert printed_value(r.of("print current")) == '{id = 2, square = 4, tag = "ftrace\\000"}'

    # Frame k: traced(k, 3), called after traced(k - 1) set current.
    expected = [(k, 2, k, 3, tp, k, max(k - 1, 0), max(k - 1, 0) ** 2) for k in range(5)]
    assert frames_of(r.of(walk)) == expected, r.of(walk)


def test_registers_and_globals_non_pie(e2e, builds):
    check_registers_and_globals(e2e, builds.path(PROGRAM, pie=False))


@pytest.mark.tpagent_only("gdbserver's jump pads are too far from PIE code")
def test_registers_and_globals_pie(e2e, builds):
    check_registers_and_globals(e2e, builds.path(PROGRAM, pie=True))


@pytest.mark.tpagent_only("gdbserver's jump pads are too far from shared libraries")
def test_shared_library(e2e, builds):
    """ftrace in a function of a shared library the program is linked against; the
    program then runs to its end with the right sum."""
    program = builds.with_library()
    reference = native_run(program, "6")
    server = serve_with_agent(e2e, program, "6")
    define = e2e.command_file("ftrace lib_traced", "actions", "collect $regs", "collect lib_hits, lib_last", "end")
    walk = walk_frames(e2e, "$rdi", "lib_hits", "lib_last")
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
        "tfind 2",
        "tdump",
        walk,
        "tfind none",
        "delete",
        "continue",
        program=program,
    )
    tp = fast_tracepoint_address(r.of(define), 2, "ftrace_lib")
    assert_in_order(r.of("continue", 1), r"Breakpoint 3, finished \(")
    assert_in_order(r.of("tstatus"), r"^Collected 6 trace frames\.$")
    assert_in_order(
        r.of("tdump"),
        r"^Data collected at tracepoint 2, trace frame 2:$",
        r"^rdi\s+0x14\s+20$",
        rf"^rip\s+0x{tp:x}\s+0x{tp:x} <lib_traced\+\d+>$",
        r"^lib_hits = 2$",
        r"^lib_last = 10$",
    )
    # Frame k: lib_traced(10 * k), after lib_traced(10 * (k - 1)).
    expected = [(k, 2, 10 * k, k, 10 * (k - 1) if k else -1) for k in range(6)]
    assert frames_of(r.of(walk)) == expected, r.of(walk)
    exited_with(r.of("continue", 2), server.inferior_pid, reference.returncode)
    server.wait_for(rf"^{re.escape(reference.stdout.strip())}$")


# --------------------------------------------------------------------------- what is collected, when


def test_condition_locals_and_memory(e2e, builds):
    """ftrace LINE if n % 3 == 0: only the matching hits make frames, each with the
    locals, an array slice and a struct as traced(n) left them at that line."""
    program = builds.path(PROGRAM)
    server = serve_with_agent(e2e, program, "10")
    late = e2e.line(PROGRAM, "traced_late")
    define = e2e.command_file(
        f"ftrace {PROGRAM}.c:{late} if n % 3 == 0",
        "actions",
        "collect $locals, n",
        "collect bytes[4]@8, current",
        "end",
    )
    walk = walk_frames(e2e, "n", "squared", "product", "current.id", "current.square", "bytes[4]", "bytes[11]")
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
        "info tracepoints 2",
        "tfind 1",
        "tdump",
        "print bytes[3]",
        "print bytes[12]",
        walk,
        program=program,
    )
    assert_in_order(
        r.of("info tracepoints 2"),
        r"^2\s+fast tracepoint\s+keep y\s+0x[0-9a-f]+ in traced at .*ftrace_loop\.c:\d+$",
        r"^\s+trace only if n % 3 == 0$",
    )
    assert_in_order(r.of("tstatus"), r"^Collected 4 trace frames\.$")
    assert_in_order(
        r.of("tdump"),
        r"^Data collected at tracepoint 2, trace frame 1:$",
        r"^squared = 9$",
        rf"^product = {mix(27)}$",
        r"^n = 3$",
        r'^bytes\[4\]@8 = "456789:;"$',
        r'^current = \{id = 3, square = 9, tag = "ftrace\\000"\}$',
    )
    # Only bytes[4..11] were collected.
    assert printed_value(r.of("print bytes[3]")) == "<unavailable>"
    assert printed_value(r.of("print bytes[12]")) == "<unavailable>"
    expected = [
        (k, 2, n, n * n, mix(3 * n * n), n, n * n, (n * 16 + 4) & 0xFF, (n * 16 + 11) & 0xFF)
        for k, n in enumerate((0, 3, 6, 9))
    ]
    assert frames_of(r.of(walk)) == expected, r.of(walk)


@pytest.mark.tpagent_only("gdbserver's in-process agent leaves trace state variables at their initial values")
def test_trace_state_variables(e2e, builds):
    """teval in a fast tracepoint's actions: each frame holds the variables as that hit
    left them, and the target's current values are the last hit's."""
    program = builds.path(PROGRAM)
    server = serve_with_agent(e2e, program, "6")
    define = e2e.command_file(
        "tvariable $calls = 0",
        "tvariable $sum = 100",
        "ftrace traced",
        "actions",
        "teval $calls = $calls + 1",
        "teval $sum = $sum + n",
        "collect $calls, $sum",
        "end",
    )
    walk = walk_frames(e2e, "$calls", "$sum")
    r = gdb_tracing(
        e2e,
        server.remote,
        *TO_MAIN,
        define,
        "break finished",
        "tstart",
        "continue",
        "tstop",
        "info tvariables",
        "tfind 3",
        "tdump",
        walk,
        program=program,
    )
    assert re.search(r"^\$calls\s+0\s+6\s*$", r.of("info tvariables"), re.M), r.of("info tvariables")
    assert re.search(r"^\$sum\s+100\s+115\s*$", r.of("info tvariables"), re.M), r.of("info tvariables")
    assert_in_order(
        r.of("tdump"), r"^Data collected at tracepoint 2, trace frame 3:$", r"^\$calls = 4$", r"^\$sum = 106$"
    )
    expected = [(k, 2, k + 1, 100 + k * (k + 1) // 2) for k in range(6)]
    assert frames_of(r.of(walk)) == expected, r.of(walk)


def test_passcount(e2e, builds):
    """passcount 5: the fifth hit stops the trace; the program runs on untraced."""
    program = builds.path(PROGRAM)
    server = serve_with_agent(e2e, program, "10")
    define = e2e.command_file("ftrace traced", "actions", "collect n", "end", "passcount 5 2")
    r = gdb_tracing(
        e2e,
        server.remote,
        *TO_MAIN,
        define,
        "break finished",
        "info tracepoints 2",
        "tstart",
        "continue",
        "tstatus",
        "tfind 4",
        "print n",
        "tfind",
        "tfind none",
        "print hits",
        program=program,
    )
    assert_in_order(r.of("info tracepoints 2"), r"^\s+collect n$", r"^\s+pass count 5 $")
    assert_in_order(r.of("continue", 1), r"Breakpoint 3, finished \(\)")
    assert_in_order(r.of("tstatus"), r"^Trace stopped by tracepoint 2\.$", r"^Collected 5 trace frames\.$")
    assert r.of("tfind 4").startswith("Found trace frame 4, tracepoint 2\n"), r.of("tfind 4")
    assert printed_value(r.of("print n")) == "4"
    assert r.of("tfind").strip() == "No trace frame found"
    assert printed_value(r.of("print hits")) == "10"


@pytest.mark.tpagent_only("gdbserver's jump pad pushes registers over a leaf function's red zone")
def test_leaf_function_red_zone(e2e, builds):
    """leaf() calls nothing, so its locals are in the red zone below rsp: the pad must not
    write there, neither in the frames (locals as the program set them) nor in the program
    (which still gets its checksum right)."""
    program = builds.path(PROGRAM)
    reference = native_run(program, "6")
    server = serve_with_agent(e2e, program, "6")
    late = e2e.line(PROGRAM, "leaf_late")
    define = e2e.command_file(f"ftrace {PROGRAM}.c:{late}", "actions", "collect n, $locals", "end")
    walk = walk_frames(e2e, "n", "doubled", "tripled")
    r = gdb_tracing(
        e2e,
        server.remote,
        *TO_MAIN,
        define,
        "break finished",
        "tstart",
        "continue",
        "tstop",
        "print result",
        walk,
        "tfind none",
        "delete",
        "continue",
        program=program,
    )
    assert frames_of(r.of(walk)) == [(n, 2, n, 2 * n, 3 * n) for n in range(6)], r.of(walk)
    checksum = int(re.match(r"checksum=(-?\d+) ", reference.stdout).group(1))
    assert printed_value(r.of("print result")) == str(checksum)
    exited_with(r.of("continue", 2), server.inferior_pid, reference.returncode)


# --------------------------------------------------------------------------- threads


def test_four_threads(e2e, builds):
    """Four threads hit one fast tracepoint together, 50 times each: every hit is a frame
    holding its own thread's arguments, registers and locals."""
    threads, rounds = 4, 50
    program = builds.path("ftrace_threads")
    server = serve_with_agent(e2e, program)
    define = e2e.command_file("ftrace work", "actions", "collect $rdi, $rsi, id, round", "end")
    walk = walk_frames(e2e, "id", "round", "$rdi", "$rsi")
    r = gdb_tracing(
        e2e,
        server.remote,
        *TO_MAIN,
        define,
        "set trace-buffer-size 4194304",
        "set circular-trace-buffer off",
        "break all_done",
        "tstart",
        "continue",
        "tstop",
        "tstatus",
        walk,
        program=program,
    )
    assert_in_order(r.of("continue", 1), r"Breakpoint 3, all_done \(\)")
    assert_in_order(
        r.of("tstatus"), r"^Trace stopped by a tstop command", rf"^Collected {threads * rounds} trace frames\.$"
    )
    rows = frames_of(r.of(walk))
    assert [row[0] for row in rows] == list(range(threads * rounds)), r.of(walk)
    # The registers are the hitting thread's: rdi, rsi are work()'s arguments id, round.
    assert all(row[2:4] == row[4:6] for row in rows), [row for row in rows if row[2:4] != row[4:6]]
    # Each thread's rounds appear once each, in order (a thread's own hits are in order).
    for tid in range(threads):
        assert [rnd for _, _, t, rnd, _, _ in rows if t == tid] == list(range(rounds)), (tid, rows)


# --------------------------------------------------------------------------- the program's code afterwards


def test_program_runs_on_after_tstop(e2e, builds):
    """tstop halfway: the jump goes and the original instruction is back (the same bytes as
    before tstart), and the rest of the run, untraced, gives the same checksum as a run
    without any debugger.

    The code is read both through the server (x/8xb) and, by a shell command, straight
    from /proc/PID/mem, which shows the jump while the trace runs: a server may hide its
    own code changes from gdb's reads."""
    program = builds.path(PROGRAM)
    reference = native_run(program, "10")
    server = serve_with_agent(e2e, program, "10")
    define = e2e.command_file("ftrace traced", "actions", "collect n", "end")
    where = "info tracepoints 2"  # leaves the tracepoint's address in $_
    mem = f"/proc/{server.inferior_pid}/mem"
    direct = f'eval "shell dd if={mem} bs=1 skip=%lu count=8 status=none | od -An -tx1", $_'
    r = gdb_tracing(
        e2e,
        server.remote,
        *TO_MAIN,
        define,
        where,
        direct,
        "x/8xb $_",
        "break halfway",
        "tstart",
        "continue",
        where,
        direct,
        "tstop",
        "tstatus",
        where,
        direct,
        "x/8xb $_",
        "delete",
        "continue",
        program=program,
    )
    tp = fast_tracepoint_address(r.of(define), 2)
    before, during, after = (r.of(direct, n).split() for n in range(3))
    through_server = [r.of("x/8xb $_", n) for n in range(2)]
    assert through_server[0].startswith(f"0x{tp:x} <traced+"), through_server[0]
    assert re.findall(r"\b0x([0-9a-f]{2})\b", through_server[0]) == before, (through_server[0], before)
    # The line's first instruction is mov 0x...(%rip),%eax (see ftrace_loop.c).
    assert before[:2] == ["8b", "05"], before
    assert during[0] == "e9", (before, during)  # jmp rel32, to the jump pad
    assert after == before, (before, after)
    assert through_server[1] == through_server[0]
    assert_in_order(r.of("continue", 1), r"Breakpoint 3, halfway \(\)")
    assert_in_order(r.of("tstatus"), r"^Collected 5 trace frames\.$")
    exited_with(r.of("continue", 2), server.inferior_pid, reference.returncode)
    server.wait_for(rf"^{re.escape(reference.stdout.strip())}$")


# --------------------------------------------------------------------------- trace files


def run_and_save(e2e, builds, *save_commands: str) -> tuple[Path, object]:
    program = builds.path(PROGRAM)
    server = serve_with_agent(e2e, program, "6")
    late = e2e.line(PROGRAM, "traced_late")
    define = e2e.command_file(
        f"ftrace {PROGRAM}.c:{late}",
        "actions",
        "collect $regs, $locals, n, current, bytes",
        "end",
    )
    live = gdb_tracing(
        e2e,
        server.remote,
        *TO_MAIN,
        define,
        "break finished",
        "tstart",
        "continue",
        "tstop",
        *save_commands,
        program=program,
    )
    for command in save_commands:
        assert live.of(command).strip() == "", live  # gdb -batch says nothing on success
    return program, live


VIEW = ("tstatus", "info tracepoints", "tfind 3", "tdump", "print bytes", "tfind", "tfind", "tfind", "tfind end")


def view(e2e, program: Path, trace_file: Path):
    """A new gdb reads the trace file (non-PIE: the symbols need no offset)."""
    assert trace_file.read_bytes().startswith(b"\x7fTRACE0\n")
    return e2e.gdb(f"target tfile {trace_file}", *VIEW, program=program)


def check_view(r) -> None:
    assert_in_order(r.of("tstatus"), r"^Using a trace file\.$", r"^Collected 6 trace frames\.$")
    assert_in_order(
        r.of("info tracepoints"),
        r"^1\s+fast tracepoint\s+keep y\s+0x[0-9a-f]+ in traced at .*ftrace_loop\.c:\d+$",
    )
    assert r.of("tfind 3").startswith("Found trace frame 3, tracepoint 1\n"), r.of("tfind 3")
    assert_in_order(
        r.of("tdump"),
        r"^Data collected at tracepoint 1, trace frame 3:$",
        r"^rip\s+0x[0-9a-f]+\s+0x[0-9a-f]+ <traced\+\d+>$",
        r"^squared = 9$",
        rf"^product = {mix(27)}$",
        r"^n = 3$",
        r'^current = \{id = 3, square = 9, tag = "ftrace\\000"\}$',
        r'^bytes = "0123456789:;<=>\?"$',
    )
    assert printed_value(r.of("print bytes")) == '"0123456789:;<=>?"'
    assert r.of("tfind").startswith("Found trace frame 4, tracepoint 1\n")
    assert r.of("tfind", 1).startswith("Found trace frame 5, tracepoint 1\n")
    assert r.of("tfind", 2).strip() == "No trace frame found"


def test_tsave_and_tfile(e2e, builds):
    """gdb's tsave pulls the fast tracepoint's frames into a file a new gdb reads."""
    trace_file = e2e.tmp / "host.tf"
    program, _ = run_and_save(e2e, builds, f"tsave {trace_file}")
    r = view(e2e, program, trace_file)
    assert_in_order(
        r.of(f"target tfile {trace_file}"),
        r"Created tracepoint 1 for target's tracepoint 2 at 0x[0-9a-f]+\.",
    )
    check_view(r)


@pytest.mark.tpagent_only("gdbserver does not implement QTSave (tsave -r)")
def test_tsave_r_reads_like_gdbs_own_file(e2e, builds):
    ours, theirs = e2e.tmp / "target.tf", e2e.tmp / "host.tf"
    program, _ = run_and_save(e2e, builds, f"tsave -r {ours}", f"tsave {theirs}")
    a, b = view(e2e, program, ours), view(e2e, program, theirs)
    check_view(a)
    assert {c: a.of(c) for c in VIEW} == {c: b.of(c) for c in VIEW}


# --------------------------------------------------------------------------- refusals and the agent option


def test_without_the_agent_library(e2e, builds):
    """A program started without the library: tstart refuses the fast tracepoint, and the
    session goes on (the program runs to its end, untraced)."""
    program = builds.path(PROGRAM)
    reference = native_run(program, "4")
    server = e2e.serve(program, "4")
    define = e2e.command_file("ftrace traced", "actions", "collect n", "end")
    r = e2e.gdb(
        server.remote,
        *TO_MAIN,
        define,
        "tstart",
        "tstatus",
        "info registers rip",
        "continue",
        program=program,
    )
    assert re.search(r"in-process agent", r.of("tstart"), re.I), r.of("tstart")
    assert not re.search(r"^Trace is running", r.of("tstatus"), re.M), r.of("tstatus")
    assert re.search(r"^rip\s+0x[0-9a-f]+\s+0x[0-9a-f]+ <main\+\d+>$", r.of("info registers rip"), re.M), r
    exited_with(r.of("continue", 1), server.inferior_pid, reference.returncode)


@pytest.mark.tpagent_only("gdbserver silently ignores while-stepping on fast tracepoints")
def test_while_stepping_refused(e2e, builds):
    """gdb itself will not put while-stepping on an ftrace, so the definition is sent raw:
    fast tracepoint 1 with step count 2. The target refuses it (at QTStart, or already at
    QTDP) naming while-stepping, and the session goes on."""
    program = builds.path(PROGRAM)
    server = serve_with_agent(e2e, program, "4")
    entry = e2e.line(PROGRAM, "traced_entry")
    # Fast tracepoint 1 at $_ (F6: a 6-byte instruction), step count 2; then its one
    # action, a while-stepping one (S) collecting register 16, rip.
    sent = (
        "maint packet QTinit",
        'eval "maint packet QTDP:1:%lx:E:2:0:F6-", $_',
        'eval "maint packet QTDP:-1:%lx:SR010000", $_',
        "maint packet QTStart",
    )
    r = e2e.gdb(
        server.remote,
        *TO_MAIN,
        f"info line {PROGRAM}.c:{entry}",  # leaves the line's address in $_
        *sent,
        "x/2i $_",
        "tstatus",
        "info registers rip",
        "break finished",
        "continue",
        program=program,
    )
    addresses = [int(a, 16) for a in re.findall(r"^(?:=> )?\s*0x([0-9a-f]+) <traced\+\d+>:", r.of("x/2i $_"), re.M)]
    assert len(addresses) == 2 and addresses[1] - addresses[0] == 6, r.of("x/2i $_")
    replies = [re.search(r'received: "(.*)"', r.of(command)).group(1) for command in sent[1:]]
    refusals = [reply for reply in replies if reply != "OK"]
    assert refusals and refusals[0].startswith("E") and "while-stepping" in refusals[0], replies
    assert replies[-1] != "OK", replies
    assert not re.search(r"^Trace is running", r.of("tstatus"), re.M), r.of("tstatus")
    assert re.search(r"^rip\s+0x[0-9a-f]+\s+0x[0-9a-f]+ <main\+\d+>$", r.of("info registers rip"), re.M), r
    assert_in_order(r.of("continue", 1), r"Breakpoint 2, finished \(\)")


@pytest.mark.tpagent_only("--inproc is tpagent's option")
def test_inproc_option(e2e, builds):
    """tpagent --inproc preloads the library next to its binary into the program it starts."""
    program = builds.path(PROGRAM)
    server = e2e.serve(program, "1", options=("--inproc",))
    define = e2e.command_file("ftrace traced", "actions", "collect n", "end")
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
        "tfind start",
        "print n",
        program=program,
    )
    assert_in_order(r.of("tstatus"), r"^Collected 1 trace frames\.$")
    assert r.of("tfind start").startswith("Found trace frame 0, tracepoint 2\n"), r.of("tfind start")
    assert printed_value(r.of("print n")) == "0"


def test_agent_through_gdb_set_environment(e2e, builds):
    """Extended-remote: gdb's `set environment LD_PRELOAD=...` reaches the program started by
    `run` (QEnvironmentHexEncoded), so the agent loads without a server option."""
    program = builds.path(PROGRAM)
    server = e2e.serve_multi()
    define = e2e.command_file("ftrace traced", "actions", "collect n", "end")
    r = gdb_tracing(
        e2e,
        server.extended_remote,
        f"set remote exec-file {program}",
        f"set environment LD_PRELOAD={agent_library(e2e)}",
        "break main",
        "run 1",
        "delete",
        define,
        "break finished",
        "tstart",
        "continue",
        "tstop",
        "tstatus",
        "tfind start",
        "print n",
        program=program,
    )
    assert_in_order(r.of("tstatus"), r"^Collected 1 trace frames\.$")
    assert r.of("tfind start").startswith("Found trace frame 0, tracepoint 2\n"), r.of("tfind start")
    assert printed_value(r.of("print n")) == "0"
