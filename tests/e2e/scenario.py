"""The scenario layer: what the end-to-end tests share, so that each test holds only its
scenario (which program, which gdb commands, what must come out) and none of the mechanics.

- `Scenario(e2e, NAME, *ARGS, pie=, agent=, options=)`: programs/NAME.c built, started under
  the server with ARGS and stopped at its entry; `.gdb(*commands)` runs gdb connected to it
  and gives a `Result`; `.raw()` is a raw protocol connection to it instead (`RspClient`).
  `Scenario.multi()` and `Scenario.attach()` serve it with --multi or --attach.
  `FastTrace` is a Scenario for fast tracepoints: non-PIE, the in-process agent preloaded,
  and gdb's tstart must print nothing.
- Builders of gdb command sequences: `TO_MAIN`, `trace_to()`, `TO_THE_END`, tracepoint
  definitions (`trace()`, `ftrace()`, `while_stepping()`, `Scenario.define()`), a walk over
  the trace frames (`Scenario.walk()`), a read of the program's code that goes around the
  server (`Scenario.read_code()`).
- Parsers of what gdb prints: `parse_tstatus()`, `parse_tfind()`, `parse_tdump()`,
  `parse_frames()` (a walk's rows), `tracepoint_address()`; `Result` applies them to one
  command's output (`r.status()`, `r.found("tfind 3")`, `r.dump()`, `r.frames(walk)`).
- How a program must end: `native_run()` (the run without a debugger), `exited_with()`,
  `Scenario.ends_as_natively()`.
- `record_reliability()`: a fault test's figures for the README's Reliability table.
- `measure_trace_file()`: a tsave -r file's size with no frame and per frame on this machine
  (a frame's register block is the CPU's), for tests that must fill a file or a disk.
- The raw protocol: `STOP_REPLY`, `assert_session_works()`, the tracepoint table
  (`tracepoint_table()`, `tracepoint_rows()`), `run_to()`, the program's memory and symbols
  (`program_bytes()`, `symbol_addresses()`).
"""

from __future__ import annotations

import functools
import json
import os
import re
import subprocess
from collections import Counter
from dataclasses import dataclass
from pathlib import Path

from harness import GDB_TIMEOUT, E2E, Gdb, GdbResult, Server, assert_in_order, hex_value, printed_value
from rsp import RspClient, decode_rle

# gdb to main first: the program's final addresses are known (a tracepoint needs them) and
# its shared libraries are loaded. Breakpoint 1 is gone after it, so what the test defines
# next is number 2.
TO_MAIN = ("break main", "continue", "delete")
# Out of the trace frames, no breakpoint left, the program run to its end.
TO_THE_END = ("tfind none", "delete", "continue")
GDBSERVER_AGENT = "/usr/lib/libinproctrace.so"


def trace_to(function: str, tstop: bool = True, tstatus: bool = True) -> tuple[str, ...]:
    """A trace run: break FUNCTION, tstart, continue to it; then tstop and tstatus."""
    return ("break " + function, "tstart", "continue", *(["tstop"] if tstop else []), *(["tstatus"] if tstatus else []))


# --------------------------------------------------------------------------- tracepoint definitions


def trace(location: str, *actions: str) -> tuple[str, ...]:
    """The lines defining a trap tracepoint at LOCATION ("record_hit", "traced.c:12 if i > 2")
    with its actions ("collect $regs", "teval $n = $n + 1", while_stepping(...)...)."""
    return (f"trace {location}", "actions", *_lines(actions), "end")


def ftrace(location: str, *actions: str) -> tuple[str, ...]:
    """The same for a fast tracepoint."""
    return (f"ftrace {location}", "actions", *_lines(actions), "end")


def while_stepping(count: int, *actions: str) -> tuple[str, ...]:
    """A while-stepping action: COUNT single steps after the hit, each collecting ACTIONS."""
    return (f"while-stepping {count}", *actions, "end")


def _lines(parts) -> list[str]:
    """Lines and tuples of lines, as one list of lines."""
    return [line for part in parts for line in ((part,) if isinstance(part, str) else part)]


# --------------------------------------------------------------------------- parsers


@dataclass(frozen=True)
class TraceStatus:
    """What tstatus printed, line by line."""

    text: str
    file: bool  # "Using a trace file."
    running: bool  # "Trace is running on the target."
    never_run: bool  # "No trace has been run on the target."
    stopped: str | None  # "Trace stopped by a tstop command ()." -> "by a tstop command"
    collected: int | None  # "Collected N trace frames."
    buffered: int | None  # "Buffer contains N trace frames (of M created total)."
    created: int | None  # M
    free: int | None  # "Trace buffer has FREE bytes of SIZE bytes free (P% full)."
    size: int | None
    circular: bool  # "Trace buffer is circular."
    on_disconnect: str | None  # "Trace will continue if GDB disconnects." -> "continue" (or "stop")

    @property
    def frames(self) -> int | None:
        """The frames the buffer holds, linear or circular."""
        return self.collected if self.collected is not None else self.buffered


def parse_tstatus(text: str) -> TraceStatus:
    def find(pattern: str) -> re.Match | None:
        return re.search(pattern, text, re.M)

    def number(match: re.Match | None, group: int = 1) -> int | None:
        return int(match.group(group)) if match else None

    stopped = find(r"^Trace stopped (.*?)(?: \([^()]*\))?\.$")
    collected = find(r"^Collected (\d+) trace frames\.$")
    buffered = find(r"^Buffer contains (\d+) trace frames \(of (\d+) created total\)\.$")
    buffer = find(r"^Trace buffer has (\d+) bytes of (\d+) bytes free \(\d+% full\)\.$")
    disconnect = find(r"^Trace will (continue|stop) if GDB disconnects\.$")
    return TraceStatus(
        text=text,
        file=bool(find(r"^Using a trace file\.$")),
        running=bool(find(r"^Trace is running on the target\.$")),
        never_run=bool(find(r"^No trace has been run on the target\.$")),
        stopped=stopped.group(1) if stopped else None,
        collected=number(collected),
        buffered=number(buffered),
        created=number(buffered, 2),
        free=number(buffer),
        size=number(buffer, 2),
        circular=bool(find(r"^Trace buffer is circular\.$")),
        on_disconnect=disconnect.group(1) if disconnect else None,
    )


def parse_tfind(text: str) -> tuple[int, int] | None:
    """(frame, tracepoint) of "Found trace frame F, tracepoint T", the first line of what a
    tfind printed; None for "No trace frame found", all it printed."""
    found = re.match(r"Found trace frame (\d+), tracepoint (\d+)\n", text)
    if found:
        return int(found.group(1)), int(found.group(2))
    assert text.strip() == "No trace frame found", f"tfind found nothing, and said so otherwise: {text!r}"
    return None


@dataclass(frozen=True)
class TraceDump:
    """What tdump printed: the frame it shows, and then the collected data (body)."""

    tracepoint: int
    frame: int
    body: str

    def shows(self, *lines: str) -> list[re.Match]:
        """Each regex matches a line of the body, in this order."""
        return assert_in_order(self.body, *lines)


def parse_tdump(text: str) -> TraceDump:
    header = re.search(r"^Data collected at tracepoint (\d+), trace frame (\d+):\n", text, re.M)
    assert header, f"not what tdump prints:\n{text}"
    return TraceDump(int(header.group(1)), int(header.group(2)), text[header.end() :])


# A Scenario.walk() line: "frame N tp T: V1 V2 ...".
WALK_ROW = re.compile(r"^frame (\d+) tp (\d+): ([-\d ]*)$", re.M)


def parse_frames(text: str) -> list[tuple[int, ...]]:
    """The rows of a Scenario.walk(), as tuples (frame, tracepoint, values...)."""
    return [(int(frame), int(tp), *map(int, values.split())) for frame, tp, values in WALK_ROW.findall(text)]


def every_call_recorded_or_counted(calls: list[int], note: str, count: int, per_call: int = 2) -> None:
    """A recording's files hold PER_CALL frames of each of COUNT calls once, in collection
    order, but for those tstatus's note counts as not collected (the buffer was full before
    the recorder drained it: a loaded machine can fall behind a fast tracepoint). Such losses
    stay few; none at all, and every frame is there."""
    recorded = number_in(r"recorded (\d+) frame\(s\)", note)
    not_collected = number_in(r"(\d+) not collected", note)
    assert recorded + not_collected == per_call * count and recorded >= count, note
    assert len(calls) == recorded and calls == sorted(calls), calls[:20]
    assert max(Counter(calls).values(), default=0) <= per_call, calls[:20]
    if not_collected == 0:
        assert calls == [i for i in range(count) for _ in range(per_call)], calls[:20]


def number_in(pattern: str, text: str) -> int:
    """PATTERN's first group as a number, 0 where it does not match."""
    m = re.search(pattern, text)
    return int(m.group(1)) if m else 0


def tracepoint_address(
    text: str, number: int, fast: bool = False, source: str | None = None, line: int | None = None
) -> int:
    """The address in gdb's "[Fast t|T]racepoint N at 0xADDR[: file SOURCE.c, line L.]";
    with LINE, that line is the whole of one line of TEXT."""
    kind = "Fast tracepoint" if fast else "Tracepoint"
    if line is not None:
        return hex_value(text, rf"(?m)^{kind} {number} at 0x([0-9a-f]+): file .*{source}\.c, line {line}\.$")
    where = rf": file .*{source}\.c, line \d+\." if source else ""
    return hex_value(text, rf"{kind} {number} at 0x([0-9a-f]+){where}")


def examined_bytes(text: str) -> list[int]:
    """The bytes an x/Nxb printed."""
    return [int(b, 16) for b in re.findall(r"\b0x([0-9a-f]{2})\b", text)]


def dumped_bytes(text: str) -> list[int]:
    """The bytes od -An -tx1 printed (Scenario.read_code)."""
    return [int(b, 16) for b in text.split()]


class Result(GdbResult):
    """A gdb run (harness.GdbResult) with the parsers applied to one command's output;
    NTH picks the nth run of that command, from 0."""

    def status(self, nth: int = 0) -> TraceStatus:
        return parse_tstatus(self.of("tstatus", nth))

    def trace_stopped(self, reason: str, collected: int, nth: int = 0) -> TraceStatus:
        """The nth tstatus says the trace stopped REASON ("by a tstop command") and how many
        frames it collected."""
        status = self.status(nth)
        assert (status.stopped, status.collected) == (reason, collected), status
        return status

    def found(self, command: str = "tfind", nth: int = 0) -> tuple[int, int] | None:
        return parse_tfind(self.of(command, nth))

    def dump(self, nth: int = 0) -> TraceDump:
        return parse_tdump(self.of("tdump", nth))

    def dumped(self, tracepoint: int, frame: int, *lines: str, nth: int = 0) -> list[re.Match]:
        """The nth tdump shows FRAME of TRACEPOINT, and lines matching these, in this order."""
        dump = self.dump(nth)
        assert (dump.tracepoint, dump.frame) == (tracepoint, frame), dump
        return dump.shows(*lines)

    def frames(self, walk: str, nth: int = 0) -> list[tuple[int, ...]]:
        return parse_frames(self.of(walk, nth))

    def available(self, walk: str) -> list[str]:
        """What a Scenario.walk_available() printed: a value per frame, "-" where none."""
        return re.search(r"^values: ([-\d ]*)$", self.of(walk), re.M).group(1).split()

    def value(self, command: str, nth: int = 0) -> str:
        """What a print command printed, without its "$N = "."""
        return printed_value(self.of(command, nth))

    def replies(self, *commands: str) -> list[str]:
        """The target's replies to these "maint packet" commands."""
        return [re.search(r'received: "(.*)"', self.of(command)).group(1) for command in commands]

    def stopped_at(self, nth: int, *patterns: str) -> list[re.Match]:
        """The nth continue (TO_MAIN's is 0) printed these, in this order."""
        return assert_in_order(self.of("continue", nth), *patterns)


def tpdump(trace_file: Path, *options: str, timeout: float = 60) -> list[dict]:
    """Every frame of a trace file as tpdump --json reads it (tpdump is next to tpagent)."""
    tool = Path(os.environ["TPAGENT_BIN"]).parent / "tpdump"
    argv = [str(tool), "--json", *options, str(trace_file)]
    out = subprocess.run(argv, capture_output=True, text=True, timeout=timeout)
    assert out.returncode == 0, out.stderr
    return [json.loads(line) for line in out.stdout.splitlines()]


# --------------------------------------------------------------------------- how a program ends


# gdb 13.1's `strace -m` names the marker through a pointer into a string it has already freed
# (breakpoint.c, the tracepoint's constructor: `&locspec_->to_string ()[3]`); now and then gdb
# itself crashes there ("Fatal signal: Segmentation fault", about 1 run in 6 here), before
# tpagent sees the tracepoint. Such a run says nothing of tpagent: it is made again, anew.
GDB_CRASHED = "A fatal error internal to GDB has been detected"


def past_gdb_strace_m_crashes(run, attempts: int = 3):
    """RUN() -> (scenario, result): a new program and gdb session, made again while gdb itself
    crashed in it (see above)."""
    for _ in range(attempts - 1):
        s, r = run()
        if GDB_CRASHED not in r.output:
            return s, r
    return run()


def native_run(program: Path, *args: str) -> subprocess.CompletedProcess:
    """The program run with no debugger: what it prints and exits with, untouched."""
    return subprocess.run([str(program), *args], capture_output=True, text=True, timeout=20)


def exited_with(text: str, pid: int, code: int) -> None:
    """gdb says process PID exited with CODE."""
    if code == 0:
        assert_in_order(text, rf"^\[Inferior 1 \(process {pid}\) exited normally\]$")
    else:
        # gdb prints the code in octal.
        assert_in_order(text, rf"^\[Inferior 1 \(process {pid}\) exited with code 0*{code:o}\]$")


# --------------------------------------------------------------------------- scenarios


def record_reliability(fault: str, times: int, frames: int = 0) -> None:
    """A fault test's figures for the README's Reliability table (scripts/reliability.py):
    FAULT was survived TIMES times, with FRAMES trace frames checked intact afterwards. Call it
    after the test's assertions, so a failed test records nothing. Appended as a JSON line to
    $TPAGENT_RELIABILITY_LOG when it is set (the script sets it); else nothing happens."""
    log = os.environ.get("TPAGENT_RELIABILITY_LOG")
    if log:
        with open(log, "a") as out:
            out.write(json.dumps({"fault": fault, "times": times, "frames": frames}) + "\n")


def agent_library(e2e: E2E) -> str:
    """The in-process agent: gdbserver's libinproctrace.so, or tpagent's libtpagent-inproc.so
    ($TPAGENT_INPROC_LIB, else the one next to the tpagent binary)."""
    if e2e.is_gdbserver:
        return GDBSERVER_AGENT
    default = Path(e2e.server_bin.path).parent / "libtpagent-inproc.so"
    return os.environ.get("TPAGENT_INPROC_LIB") or str(default)


class Scenario:
    """programs/NAME.c under the server, and gdb (or a raw protocol client) on it.

    The server starts the program with ARGS, stopped at its entry (OPTIONS go before the
    program on the server's command line; LAUNCHER, e.g. prlimit, runs the server). With
    agent=True the in-process agent library is preloaded into it (--wrapper env
    LD_PRELOAD=LIB --). PROGRAM replaces the built NAME (e.g. e2e.programs.with_library())."""

    # FastTrace: gdb's tstart printed nothing.
    quiet_tstart = False

    def __init__(
        self,
        e2e: E2E,
        name: str,
        *args: str,
        pie: bool = True,
        agent: bool = False,
        options: tuple[str, ...] = (),
        launcher: tuple[str, ...] = (),
        program: Path | None = None,
        server: Server | None = None,
        extended: bool = False,
    ) -> None:
        self.e2e = e2e
        self.name = name
        self.args = tuple(args)
        self.program = program or e2e.program(name, pie)
        if server is None:
            if agent:
                library = agent_library(e2e)
                assert Path(library).is_file(), f"no in-process agent library at {library}"
                options = ("--wrapper", "env", f"LD_PRELOAD={library}", "--", *options)
            server = e2e.serve(self.program, *self.args, options=options, launcher=launcher)
        self.server = server
        # The command connecting gdb to the server.
        self.connect = server.extended_remote if extended else server.remote

    @classmethod
    def multi(cls, e2e: E2E, name: str, pie: bool = True) -> Scenario:
        """A --multi server, no program started: gdb connects with extended-remote and runs
        it itself (after exec_file)."""
        return cls(e2e, name, pie=pie, server=e2e.serve_multi(), extended=True)

    @classmethod
    def attach(cls, e2e: E2E, name: str, pid: int) -> Scenario:
        """A server attached to the running process PID, of program NAME."""
        return cls(e2e, name, server=e2e.serve_attach(pid))

    @property
    def pid(self) -> int:
        """The program's process (the last one the server created)."""
        return self.server.inferior_pid

    @property
    def exec_file(self) -> str:
        """The gdb command naming the program an extended-remote `run` starts."""
        return f"set remote exec-file {self.program}"

    def line(self, mark: str) -> int:
        """The line of the program's source marked "MARK: <mark>"."""
        return self.e2e.line(self.name, mark)

    def at(self, mark: str) -> str:
        """That line as a gdb location, FILE.c:LINE."""
        return f"{self.name}.c:{self.line(mark)}"

    # gdb's commands

    def file(self, *lines: str) -> str:
        """A command running these lines from a file (a multi-line command's body)."""
        return self.e2e.command_file(*lines)

    def define(self, *parts) -> str:
        """A command defining tracepoints: lines ("passcount 5 2", "tvariable $n = 0") and
        definitions (trace(), ftrace())."""
        return self.file(*_lines(parts))

    def walk(self, *expressions: str, tracepoint: int | None = None) -> str:
        """A command printing "frame N tp T: E1 E2 ..." (each as %ld) for every trace frame,
        from the first; with TRACEPOINT, for that tracepoint's frames only, as tfind
        tracepoint finds them from no frame selected. parse_frames() reads its rows."""
        values = " ".join("%ld" for _ in expressions)
        args = "".join(f", {e}" for e in expressions)
        row = f'  printf "frame %d tp %d: {values}\\n", $trace_frame, $tracepoint{args}'
        if tracepoint is None:
            return self.file("tfind start", "while $trace_frame != -1", row, "  tfind", "end")
        find = f"tfind tracepoint {tracepoint}"
        return self.file("tfind none", find, "while $trace_frame != -1", row, f"  {find}", "end")

    def walk_available(self, expression: str) -> str:
        """A command printing "values: V0 V1 ..." with EXPRESSION in every trace frame, "-"
        where the frame holds none (in Python: the CLI cannot go on after reading an
        unavailable value)."""
        return self.file(
            "python",
            "values = []",
            'gdb.execute("tfind start", to_string=True)',
            'while int(gdb.parse_and_eval("$trace_frame")) == len(values):',
            "    try:",
            f'        values.append(str(int(gdb.parse_and_eval("{expression}"))))',
            "    except gdb.error:",
            '        values.append("-")',
            '    gdb.execute("tfind", to_string=True)',
            'print("values:", " ".join(values))',
            "end",
        )

    def read_code(self, address: str, count: int = 8) -> str:
        """A command printing COUNT bytes at ADDRESS (a gdb expression) straight from
        /proc/PID/mem, as od -tx1 does: what the program runs, whatever the server shows
        gdb (a server may hide its own code changes from gdb's reads)."""
        mem = f"/proc/{self.pid}/mem"
        return f'eval "shell dd if={mem} bs=1 skip=%lu count={count} status=none | od -An -tx1", {address}'

    # gdb runs

    def gdb_start(self, *commands: str, connect: bool = True, tty: bool = False) -> Gdb:
        """gdb on the program, connected to the server first (unless connect=False)."""
        return self.e2e.gdb_start(*([self.connect] if connect else []), *commands, program=self.program, tty=tty)

    def wait(self, gdb: Gdb, timeout: float = GDB_TIMEOUT) -> Result:
        done = self.e2e.show(gdb.wait(timeout=timeout))
        r = Result(done.commands, done.output, done.returncode)
        if self.quiet_tstart and "tstart" in r.commands:
            # gdb warns "Target does not support fast tracepoints, downloading N as regular
            # tracepoint" when the target lacks them.
            assert r.of("tstart").strip() == "", r.of("tstart")
        return r

    def gdb(self, *commands: str, connect: bool = True, timeout: float = GDB_TIMEOUT) -> Result:
        """gdb -batch run to completion: the connection, then COMMANDS."""
        return self.wait(self.gdb_start(*commands, connect=connect), timeout)

    def trace_and_save(self, define: str, *save_commands: str, anchor: str | None = None) -> Result:
        """gdb to main, DEFINE, a trace run to finished() and tstop; then print/x &ANCHOR
        (where this run has the program, for open_trace_file) and SAVE_COMMANDS (tsave)."""
        where = [f"print/x &{anchor}"] if anchor else []
        return self.gdb(*TO_MAIN, define, *trace_to("finished", tstatus=False), *where, *save_commands)

    def open_trace_file(self, trace_file: Path, *commands: str, live: Result | None = None) -> Result:
        """A new gdb reads TRACE_FILE (target tfile) and runs COMMANDS. With LIVE (a
        trace_and_save run), the program's symbols are loaded where that run had them: a
        PIE program's addresses in the file are the run's."""
        load = []
        if live is not None:
            anchor = next(c for c in live.commands if c.startswith("print/x &"))
            runtime = hex_value(live.of(anchor), r"= 0x([0-9a-f]+)$")
            symbol = anchor.removeprefix("print/x ")
            load = [f'eval "symbol-file -o %lu {self.program}", {runtime} - (unsigned long){symbol}']
        return self.gdb(*load, f"target tfile {trace_file}", *commands, connect=False)

    def gdb_killed_after(self, *commands: str) -> None:
        """gdb runs COMMANDS (after the connection), then is SIGKILLed mid-session, so it
        says nothing to the server first."""
        marker = self.e2e.tmp / "gdb-reached-the-end"
        # gdb sleeps in its own python rather than in a shell child that could outlive it.
        gdb = self.gdb_start(*commands, f"shell touch {marker}", "python import time; time.sleep(60)")
        self.e2e.wait_for_file(marker)
        gdb.kill()

    # the program's end

    @functools.cached_property
    def reference(self) -> subprocess.CompletedProcess:
        """The program run with the same ARGS and no debugger."""
        return native_run(self.program, *self.args)

    def exited(self, text: str, code: int) -> None:
        exited_with(text, self.pid, code)

    def exits_as_natively(self, text: str) -> None:
        """TEXT says the program exited with the native run's status."""
        self.exited(text, self.reference.returncode)

    def prints_as_natively(self) -> None:
        """The program printed (the server's output holds) each line the native run prints."""
        for line in self.reference.stdout.strip().splitlines():
            self.server.wait_for(rf"^{re.escape(line)}$")

    def ends_as_natively(self, text: str) -> None:
        """TEXT says the program exited as the native run did, and it printed what that prints."""
        self.exits_as_natively(text)
        self.prints_as_natively()

    # the raw protocol

    def raw(self, supported: str | None = None, ask_stop: bool = True) -> RspClient:
        """A raw protocol connection after the handshake gdb makes: qSupported (with gdb's
        features SUPPORTED, else rsp.handshake's; the server's are then in rsp.features),
        then '?' (unless ask_stop=False), whose answer must be a stop reply. Also a context
        manager, closing the connection."""
        rsp = RspClient(self.server.port)
        rsp.features = rsp.handshake(*([supported] if supported else []))
        if ask_stop:
            assert STOP_REPLY.match(rsp.request("?"))
        return rsp


class FastTrace(Scenario):
    """A Scenario for fast tracepoints: the program non-PIE unless pie=True (gdbserver's jump
    pads live in the low 2 GiB, out of a 32-bit jump's reach from PIE code), the in-process
    agent library preloaded unless agent=False, and gdb's tstart must print nothing."""

    quiet_tstart = True

    def __init__(self, e2e: E2E, name: str, *args: str, pie: bool = False, agent: bool = True, **kwargs) -> None:
        super().__init__(e2e, name, *args, pie=pie, agent=agent, **kwargs)


# --------------------------------------------------------------------------- a program to attach to

# programs/ftrace_attachee.c: the report it writes when it ends after a debugger set stop_now.
ATTACHEE = "ftrace_attachee"
ATTACHEE_REPORT = 'sums ok, reader got 4 bytes "wake", 0 sleeps broken, ticks ok\n'


def running_attachee(e2e: E2E, program: Path | None = None):
    """ftrace_attachee (or PROGRAM built from it) started outside any debugger, all its
    threads running; its process and the file it reports to."""
    ready, report = e2e.tmp / "ready", e2e.tmp / "report"
    target = e2e.spawn(str(program or e2e.program(ATTACHEE)), str(ready), str(report))
    e2e.wait_for_file(ready)
    return target, report


# --------------------------------------------------------------------------- sizes this machine gives


@dataclass(frozen=True)
class TraceFileSize:
    """A `tsave -r` file's size here: EMPTY bytes with no frame, PER_FRAME more a frame. A
    frame collecting $regs holds gdb's whole register block, whose size is the CPU's (x86-64:
    560 bytes without AVX, 816 with it, about 2.4 KiB with AVX-512)."""

    empty: int
    per_frame: int

    def frames_over(self, limit: int) -> int:
        """The fewest frames whose file is larger than LIMIT bytes."""
        return max(1, (limit - self.empty) // self.per_frame + 1)


def measure_trace_file(e2e: E2E, name: str, tracepoint: tuple[str, ...], hits: int = 10) -> TraceFileSize:
    """Measured, not assumed: NAME run with HITS as its argument (a tracepoint hit each; run to
    finished()), TRACEPOINT (trace(...)) defined, and the sizes of the files tsave -r writes
    of an empty trace and of the run's HITS frames."""
    s = Scenario(e2e, name, str(hits))
    empty, full = e2e.tmp / "measure-empty.tf", e2e.tmp / "measure-full.tf"
    r = s.gdb(*TO_MAIN, s.define(tracepoint), "tstart", "tstop", f"tsave -r {empty}", *trace_to("finished"), f"tsave -r {full}")
    r.trace_stopped("by a tstop command", hits)
    size = TraceFileSize(empty.stat().st_size, (full.stat().st_size - empty.stat().st_size) // hits)
    assert size.per_frame > 0, (size, r.transcript)
    empty.unlink()
    full.unlink()
    return size


# --------------------------------------------------------------------------- the raw protocol

STOP_REPLY = re.compile(r"^[ST][0-9a-f]{2}")


def assert_session_works(rsp: RspClient) -> None:
    """The session goes on: '?' is answered with a stop reply, the code at pc is readable."""
    assert STOP_REPLY.match(rsp.request("?"))
    pc = rsp.pc()
    assert re.fullmatch(r"[0-9a-f]{8}", rsp.request(f"m{pc:x},4"))


def tracepoint_table(rsp: RspClient) -> list[str]:
    """Every qTfP/qTsP piece of the target's tracepoint table, run-length encoding undone."""
    pieces = [decode_rle(rsp.request("qTfP"))]
    while pieces[-1] != "l":
        assert len(pieces) < 100, pieces
        pieces.append(decode_rle(rsp.request("qTsP")))
    return pieces[:-1]


def tracepoint_rows(rsp: RspClient) -> list[tuple[int, int, str]]:
    """(number, address, the rest) of each T piece of the table: the tracepoints themselves."""
    rows = []
    for piece in tracepoint_table(rsp):
        if piece.startswith("T"):
            number, address, rest = piece[1:].split(":", 2)
            rows.append((int(number, 16), int(address, 16), rest))
    return rows


def run_to(rsp: RspClient, address: int) -> None:
    """Continue to a breakpoint at ADDRESS (Z0), which is then removed."""
    assert rsp.request(f"Z0,{address:x},1") == "OK"
    stop = rsp.request("c")
    assert stop.startswith("T05"), stop
    assert rsp.request(f"z0,{address:x},1") == "OK"


def program_bytes(pid: int, address: int, count: int) -> bytes:
    """The bytes at address straight from /proc/PID/mem: what the program runs, whatever
    the server shows (it hides its jumps)."""
    with open(f"/proc/{pid}/mem", "rb") as mem:
        mem.seek(address)
        return mem.read(count)


def symbol_addresses(program: Path, pid: int) -> dict[str, int]:
    """The program's symbols (nm) at their addresses in process PID, where it is loaded."""
    out = subprocess.run(["nm", str(program)], capture_output=True, text=True, check=True).stdout
    rows = [row.split() for row in out.splitlines()]
    values = {row[2]: int(row[0], 16) for row in rows if len(row) == 3}
    for line in Path(f"/proc/{pid}/maps").read_text().splitlines():
        fields = line.split()
        if len(fields) >= 6 and fields[5] == str(program) and int(fields[2], 16) == 0:
            base = int(fields[0].split("-")[0], 16)
            return {name: base + value for name, value in values.items()}
    raise AssertionError(f"{program} not mapped in {pid}")
