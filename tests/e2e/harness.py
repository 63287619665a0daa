"""End-to-end harness: the real gdb drives the real server against small C programs.

The server under test is chosen by environment variable:
  TPAGENT_E2E_SERVER  path or name of the server binary (e.g. "gdbserver"), wins if set;
  TPAGENT_BIN         the tpagent binary (set by ctest);
  neither             gdbserver, the reference behaviour.
Set TPAGENT_E2E_DEBUG=1 to start the server with --debug (its log lands in test failures).

Every process a test starts gets its own session (start_new_session=True), and every
inferior pid the server reports is recorded, so teardown can kill all of them and then
check that nothing is left.
"""

from __future__ import annotations

import fcntl
import os
import re
import shutil
import signal
import struct
import subprocess
import termios
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path

E2E_DIR = Path(__file__).resolve().parent
PROGRAMS_DIR = E2E_DIR / "programs"

# Upper bound for one wait on a server line, a compile, a process exit.
WAIT_TIMEOUT = 20.0
# Upper bound for one whole gdb run.
GDB_TIMEOUT = 60.0

INFERIOR_CREATED = re.compile(r"Process .* created; pid = (\d+)")
LISTENING = re.compile(r"Listening on port (\d+)")
# Printed when gdb's connection drops and the server goes on to accept another one.
DISCONNECTED = re.compile(r"Remote side has terminated connection")

# Options given to every gdb before it reads the program: quiet, deterministic, local.
# "set sysroot /" makes gdb read shared libraries from the local disk instead of over
# the remote protocol, which is slow and not what these tests are about.
GDB_INIT = (
    "set pagination off",
    "set width 0",
    "set height 0",
    "set confirm off",
    "set sysroot /",
    "set debuginfod enabled off",
)


# --------------------------------------------------------------------------- server choice


@dataclass(frozen=True)
class ServerBinary:
    path: str
    is_gdbserver: bool

    @property
    def name(self) -> str:
        return "gdbserver" if self.is_gdbserver else "tpagent"

    @property
    def sanitized(self) -> bool:
        """Built with ASan: its quarantine and shadow memory make RSS and address-space
        figures meaningless."""
        linked = subprocess.run(["ldd", self.path], capture_output=True, text=True, timeout=20).stdout
        return "libasan" in linked

    def common_options(self) -> list[str]:
        return ["--debug"] if os.environ.get("TPAGENT_E2E_DEBUG") == "1" else []

    def tty_options(self, baud: int) -> list[str]:
        # gdbserver does not take --baud (it leaves the tty's speed alone).
        return [] if self.is_gdbserver else ["--baud", str(baud)]


def find_server() -> ServerBinary:
    name = os.environ.get("TPAGENT_E2E_SERVER") or os.environ.get("TPAGENT_BIN") or "gdbserver"
    path = shutil.which(name)
    if path is None:
        raise RuntimeError(f"server binary not found: {name!r}")
    return ServerBinary(path=os.path.abspath(path), is_gdbserver="gdbserver" in Path(path).name)


# --------------------------------------------------------------------------- processes


@dataclass(frozen=True)
class ProcStat:
    state: str
    session: int
    start: int  # start time in clock ticks since boot: tells a reused pid apart


def proc_stat(pid: int) -> ProcStat | None:
    try:
        text = Path(f"/proc/{pid}/stat").read_text()
    except (FileNotFoundError, ProcessLookupError):
        return None
    if ")" not in text:  # a process being reaped as we read: its file reads empty
        return None
    # The command name is in parentheses and may itself contain spaces or parentheses.
    fields = text[text.rindex(")") + 2 :].split()
    return ProcStat(state=fields[0], session=int(fields[3]), start=int(fields[19]))


def _living(stat: ProcStat | None) -> bool:
    return stat is not None and stat.state not in ("Z", "X")


@dataclass(frozen=True)
class ProcId:
    """A pid plus its start time, so that a recycled pid is never mistaken for ours."""

    pid: int
    start: int

    @classmethod
    def of(cls, pid: int) -> ProcId | None:
        stat = proc_stat(pid)
        return cls(pid, stat.start) if stat else None

    def alive(self) -> bool:
        stat = proc_stat(self.pid)
        return _living(stat) and stat.start == self.start


def pid_alive(pid: int) -> bool:
    return _living(proc_stat(pid))


def start_process(argv: list[str]) -> subprocess.Popen:
    """argv in a session of its own, stdin closed, stdout and stderr merged into one pipe."""
    return subprocess.Popen(
        argv,
        stdin=subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        start_new_session=True,
    )


def wait_until(predicate, timeout: float = WAIT_TIMEOUT, interval: float = 0.05) -> bool:
    deadline = time.monotonic() + timeout
    while True:
        if predicate():
            return True
        if time.monotonic() >= deadline:
            return False
        time.sleep(interval)


class Reaper:
    """Remembers every process a test caused, kills them all, reports survivors."""

    def __init__(self) -> None:
        self._popens: list[subprocess.Popen] = []
        self._sessions: set[int] = set()
        self._pids: set[ProcId] = set()
        self._lock = threading.Lock()

    def track_popen(self, proc: subprocess.Popen, own_session: bool = True) -> None:
        with self._lock:
            self._popens.append(proc)
            if own_session:
                self._sessions.add(proc.pid)

    def track_pid(self, pid: int) -> None:
        ident = ProcId.of(pid)
        if ident is not None:
            with self._lock:
                self._pids.add(ident)

    def _members(self) -> list[int]:
        """Living processes of our sessions and tracked pids (an inferior may have left
        the server's session with setsid)."""
        found = set()
        for entry in Path("/proc").iterdir():
            if entry.name.isdigit():
                stat = proc_stat(int(entry.name))
                if _living(stat) and stat.session in self._sessions:
                    found.add(int(entry.name))
        found.update(p.pid for p in self._pids if p.alive())
        return sorted(found)

    def survivors(self) -> list[str]:
        out = []
        for pid in self._members():
            try:
                cmd = Path(f"/proc/{pid}/cmdline").read_bytes().replace(b"\0", b" ").decode()
            except OSError:
                cmd = "?"
            out.append(f"{pid}: {cmd.strip()}")
        return out

    def kill_all(self) -> None:
        with self._lock:
            for _ in range(3):  # a dying server may still fork; go round until it is quiet
                members = self._members()
                if not members:
                    break
                for pid in members:
                    try:
                        os.kill(pid, signal.SIGKILL)
                    except ProcessLookupError:
                        pass
                wait_until(lambda: not self._members(), timeout=5)
            for proc in self._popens:
                try:
                    proc.wait(timeout=5)
                except subprocess.TimeoutExpired:
                    pass


# --------------------------------------------------------------------------- programs


class Programs:
    """Builds tests/e2e/programs/NAME.c on first use, once per test session.

    PIE by default (the compiler's own default); pie=False builds it -fno-pie -no-pie, for
    gdbserver's fast tracepoint jump pads, which live in the low 2 GiB out of a 32-bit
    jump's reach from PIE code. with_library() builds ftrace_shlib against
    libftrace_lib.so (ftrace_lib.c), found by rpath. COMPILER: cc, or e.g. a cross compiler."""

    def __init__(self, outdir: Path, compiler: str = "cc") -> None:
        self._outdir = outdir
        self._compiler = compiler
        self._built: dict[tuple[str, bool], Path] = {}
        self._lock = threading.Lock()

    @staticmethod
    def source(name: str) -> Path:
        return PROGRAMS_DIR / f"{name}.c"

    def path(self, name: str, pie: bool = True) -> Path:
        with self._lock:
            if (name, pie) not in self._built:
                flags = [] if pie else ["-fno-pie", "-no-pie"]
                output = self._outdir / (name if pie else f"{name}-nopie")
                self._built[name, pie] = compile_program(self.source(name), output, *flags, compiler=self._compiler)
            return self._built[name, pie]

    def _with_shared_library(self, program: str, library: str, link: tuple[str, ...]) -> tuple[Path, Path]:
        """PROGRAM (PIE) linked with LINK, and lib<LIBRARY>.so built from LIBRARY.c beside it."""
        with self._lock:
            shared = self._outdir / f"lib{library}.so"
            if (program, True) not in self._built:
                compile_program(self.source(library), shared, "-fPIC", "-shared", compiler=self._compiler)
                self._built[program, True] = compile_program(
                    self.source(program), self._outdir / program, link=link, compiler=self._compiler
                )
            return self._built[program, True], shared

    def with_library(self) -> Path:
        """ftrace_shlib (PIE) calling lib_traced() in libftrace_lib.so."""
        link = (f"-L{self._outdir}", "-lftrace_lib", f"-Wl,-rpath,{self._outdir}")
        return self._with_shared_library("ftrace_shlib", "ftrace_lib", link)[0]

    def with_sdt_markers(self) -> tuple[Path, Path]:
        """sdt_markers (PIE, linked with libstdc++ for its markers) and libsdt_lib.so
        (sdt_lib.c), which it loads with dlopen when given the library's path."""
        return self._with_shared_library("sdt_markers", "sdt_lib", ("-Wl,--no-as-needed", "-lstdc++", "-ldl"))

    def line(self, name: str, mark: str) -> int:
        """Line number of the source line tagged with the comment 'MARK: <mark>'."""
        return marked_line(self.source(name), mark)


def compile_program(
    source: Path, output: Path, *flags: str, link: tuple[str, ...] = (), compiler: str = "cc"
) -> Path:
    """COMPILER -g -O0 [-pthread] FLAGS -o OUTPUT SOURCE LINK (LINK: the libraries, after the
    source that needs them; COMPILER: e.g. a cross compiler)."""
    cmd = [compiler, "-g", "-O0", *flags, "-o", str(output), str(source), *link]
    if "<pthread.h>" in source.read_text():
        cmd.insert(1, "-pthread")
    result = subprocess.run(cmd, capture_output=True, text=True, timeout=120)
    if result.returncode != 0:
        raise RuntimeError(f"{' '.join(cmd)} failed:\n{result.stdout}{result.stderr}")
    return output


def marked_line(source: Path, mark: str) -> int:
    tag = re.compile(rf"MARK: {re.escape(mark)}\b")
    for number, text in enumerate(source.read_text().splitlines(), start=1):
        if tag.search(text):
            return number
    raise KeyError(f"no 'MARK: {mark}' in {source}")


# --------------------------------------------------------------------------- server


class Server:
    """A running server process; its merged stdout/stderr is collected line by line.

    The inferior's own output usually lands here too (it inherits the server's stdout).
    """

    def __init__(self, argv: list[str], reaper: Reaper, tty: bool = False) -> None:
        """With tty=True the server runs in a session of its own on a fresh pseudo-terminal,
        its controlling terminal, as if started from a shell: type() types on it."""
        self.argv = argv
        self.port: int | None = None
        self.inferior_pids: list[int] = []
        self._reaper = reaper
        self._lines: list[str] = []
        self._cond = threading.Condition()
        self._master: int | None = None
        if tty:
            self._master, slave = os.openpty()
            self.proc = subprocess.Popen(
                argv, stdin=slave, stdout=slave, stderr=slave, start_new_session=True,
                preexec_fn=lambda: fcntl.ioctl(0, termios.TIOCSCTTY, 0),
            )
            os.close(slave)
        else:
            self.proc = start_process(argv)
        reaper.track_popen(self.proc)
        self._reader = threading.Thread(target=self._read, daemon=True)
        self._reader.start()

    def type(self, keys: bytes) -> None:
        assert self._master is not None, "the server was not started on a tty"
        os.write(self._master, keys)

    def _raw_lines(self):
        if self._master is None:
            yield from self.proc.stdout
            return
        pending = b""
        while True:
            try:
                data = os.read(self._master, 4096)
            except OSError:  # EIO once the last holder of the terminal is gone
                break
            if not data:
                break
            pending += data.replace(b"\r\n", b"\n")
            *lines, pending = pending.split(b"\n")
            for line in lines:
                yield line + b"\n"
        if pending:
            yield pending

    def _read(self) -> None:
        for raw in self._raw_lines():
            line = raw.decode(errors="replace").rstrip("\n")
            created = INFERIOR_CREATED.search(line)
            if created:
                pid = int(created.group(1))
                self._reaper.track_pid(pid)
                self.inferior_pids.append(pid)
            with self._cond:
                self._lines.append(line)
                self._cond.notify_all()
        with self._cond:
            self._lines.append(None)  # end of output
            self._cond.notify_all()

    @property
    def output(self) -> str:
        with self._cond:
            return "\n".join(l for l in self._lines if l is not None)

    @property
    def pid(self) -> int:
        return self.proc.pid

    @property
    def inferior_pid(self) -> int:
        assert self.inferior_pids, f"server reported no inferior:\n{self.output}"
        return self.inferior_pids[-1]

    def wait_for(self, pattern: str | re.Pattern, timeout: float = WAIT_TIMEOUT, after: int = 0) -> re.Match:
        """Wait for a line matching pattern, looking only at lines numbered >= after."""
        regex = re.compile(pattern) if isinstance(pattern, str) else pattern
        deadline = time.monotonic() + timeout
        index = after
        with self._cond:
            while True:
                while index < len(self._lines):
                    line = self._lines[index]
                    if line is None:
                        raise AssertionError(
                            f"server exited without printing /{regex.pattern}/:\n{self.output}"
                        )
                    match = regex.search(line)
                    if match:
                        return match
                    index += 1
                left = deadline - time.monotonic()
                if left <= 0:
                    raise AssertionError(f"server never printed /{regex.pattern}/:\n{self.output}")
                self._cond.wait(left)

    def wait_for_count(self, pattern: str, count: int, timeout: float = WAIT_TIMEOUT) -> None:
        """Wait until count lines match pattern (e.g. a second "Listening on port")."""
        regex = re.compile(pattern)
        ok = wait_until(lambda: len(regex.findall(self.output)) >= count, timeout)
        assert ok, f"server printed /{pattern}/ fewer than {count} times:\n{self.output}"

    def wait_exit(self, timeout: float = WAIT_TIMEOUT) -> int:
        try:
            code = self.proc.wait(timeout=timeout)
        except subprocess.TimeoutExpired:
            raise AssertionError(f"server still running after {timeout}s:\n{self.output}") from None
        self._reader.join(timeout=5)
        return code

    def running(self) -> bool:
        return self.proc.poll() is None

    @property
    def remote(self) -> str:
        """The gdb command that connects to this server over TCP."""
        return f"target remote 127.0.0.1:{self.port}"

    @property
    def extended_remote(self) -> str:
        return f"target extended-remote 127.0.0.1:{self.port}"


# --------------------------------------------------------------------------- gdb


MARKER = "@@e2e-command {}@@"
MARKER_SPLIT = re.compile(r"@@e2e-command (\d+)@@\n")


@dataclass(repr=False)
class GdbResult:
    commands: list[str]
    output: str
    returncode: int
    _sections: dict[int, str] = field(default_factory=dict)

    def __post_init__(self) -> None:
        # gdb echoes a marker before each command; the text up to the next marker is
        # what that command printed.
        parts = MARKER_SPLIT.split(self.output)
        self.preamble = parts[0]
        for i in range(1, len(parts) - 1, 2):
            self._sections[int(parts[i])] = parts[i + 1]

    def of(self, command: str, nth: int = 0) -> str:
        """What the nth occurrence of command printed (stdout and stderr)."""
        indexes = [i for i, c in enumerate(self.commands) if c == command]
        assert len(indexes) > nth, f"command {command!r} not run {nth + 1} times"
        return self._sections.get(indexes[nth], "")

    @property
    def transcript(self) -> str:
        """Readable transcript: each command followed by its output."""
        lines = [self.preamble.rstrip()] if self.preamble.strip() else []
        for i, command in enumerate(self.commands):
            lines.append(f"(gdb) {command}")
            text = self._sections.get(i, "").rstrip()
            if text:
                lines.append(text)
        return "\n".join(lines)

    def __repr__(self) -> str:
        # Short: the whole transcript is in the test's captured output.
        return f"<gdb run of {len(self.commands)} commands, exit status {self.returncode}>"


def gdb_argv(
    commands: list[str], program: Path | None, gdb: str = "gdb", init: tuple[str, ...] = GDB_INIT
) -> list[str]:
    """GDB -batch -nx, the INIT options, then COMMANDS, each after its marker."""
    argv = [gdb, "-batch", "-nx"]
    for option in init:
        argv += ["-iex", option]
    for i, command in enumerate(commands):
        argv += ["-ex", f"echo {MARKER.format(i)}\\n", "-ex", command]
    if program is not None:
        argv.append(str(program))
    return argv


def start_on_terminal(
    argv: list[str], env: dict[str, str] | None = None, size: tuple[int, int] | None = None
) -> tuple[subprocess.Popen, int]:
    """ARGV on a fresh pseudo-terminal that is its controlling terminal (SIZE: its rows and
    columns, set before ARGV starts); the process and the terminal's master side."""
    master, slave = os.openpty()
    if size is not None:
        fcntl.ioctl(slave, termios.TIOCSWINSZ, struct.pack("HHHH", *size, 0, 0))
    # setsid --ctty: a new session whose controlling terminal is the pty; the Popen child is
    # no group leader, so setsid execs ARGV in place (same pid).
    proc = subprocess.Popen(["setsid", "--ctty"] + argv, stdin=slave, stdout=slave, stderr=slave, env=env)
    os.close(slave)
    return proc, master


class Gdb:
    """A gdb run in progress; wait() gives the GdbResult.

    With tty=True gdb runs on a fresh pseudo-terminal that is its controlling terminal,
    so that type() can send keys such as ^C exactly as a user at a terminal would.
    """

    def __init__(
        self,
        commands: list[str],
        program: Path | None,
        reaper: Reaper,
        tty: bool = False,
        argv: list[str] | None = None,
    ) -> None:
        """ARGV: gdb's command line when not gdb_argv(COMMANDS, PROGRAM) (e.g. another gdb)."""
        self.commands = list(commands)
        self._reaper = reaper
        self._master: int | None = None
        self._chunks: list[bytes] = []
        argv = argv or gdb_argv(self.commands, program)
        if not tty:
            self.proc = start_process(argv)
        else:
            self.proc, self._master = start_on_terminal(argv)
            self._pty_reader = threading.Thread(target=self._read_pty, daemon=True)
            self._pty_reader.start()
        reaper.track_popen(self.proc)

    def _read_pty(self) -> None:
        while True:
            try:
                data = os.read(self._master, 4096)
            except OSError:  # EIO once gdb, the last holder of the slave side, is gone
                break
            if not data:
                break
            self._chunks.append(data)

    @property
    def pid(self) -> int:
        return self.proc.pid

    def type(self, keys: bytes) -> None:
        assert self._master is not None, "gdb was not started on a tty"
        os.write(self._master, keys)

    def wait(self, timeout: float = GDB_TIMEOUT) -> GdbResult:
        try:
            out, _ = self.proc.communicate(timeout=timeout)
            timed_out = False
        except subprocess.TimeoutExpired:
            os.killpg(self.proc.pid, signal.SIGKILL)
            out, _ = self.proc.communicate()
            timed_out = True
        if self._master is not None:
            self._pty_reader.join(timeout=5)
            os.close(self._master)
            out = b"".join(self._chunks)
        text = _clean_terminal_text((out or b"").decode(errors="replace"))
        if timed_out:
            raise AssertionError(f"gdb did not finish within {timeout}s:\n{text}")
        # With "target remote | SERVER - PROG" the server's messages reach gdb's stderr.
        for match in INFERIOR_CREATED.finditer(text):
            self._reaper.track_pid(int(match.group(1)))
        return GdbResult(self.commands, text, self.proc.returncode)

    def kill(self) -> None:
        os.kill(self.proc.pid, signal.SIGKILL)
        self.proc.wait(timeout=WAIT_TIMEOUT)


ANSI_ESCAPE = re.compile(r"\x1b\[[0-9;?]*[A-Za-z]")


def _clean_terminal_text(text: str) -> str:
    return ANSI_ESCAPE.sub("", text.replace("\r\n", "\n"))


# --------------------------------------------------------------------------- output checks


def use_scratch(config, variable: str) -> None:
    """pytest's temporary directory is $VARIABLE when set (and --basetemp not given)."""
    scratch = os.environ.get(variable)
    if scratch and not config.option.basetemp:
        Path(scratch).parent.mkdir(parents=True, exist_ok=True)  # pytest makes only the last level
        config.option.basetemp = scratch


def closing(value, *sessions: E2E):
    """A fixture's body: yield VALUE (by default the one session) to the test, then close
    the SESSIONS, failing the test if any process outlived its SIGKILL."""
    yield value
    survivors = [p for session in (sessions or (value,)) for p in session.close()]
    assert not survivors, f"processes left behind after SIGKILL: {survivors}"


def assert_in_order(text: str, *patterns: str) -> list[re.Match]:
    """Each regex must match, in this order, within text."""
    pos, matches = 0, []
    for pattern in patterns:
        match = re.compile(pattern, re.MULTILINE).search(text, pos)
        assert match, f"/{pattern}/ not found after offset {pos} in:\n{text}"
        matches.append(match)
        pos = match.end()
    return matches


def printed_value(text: str) -> str:
    """What a print command printed, without its "$N = " history number."""
    match = re.fullmatch(r"\$\d+ = (.*)", text.strip())
    assert match, f"not a printed value: {text!r}"
    return match.group(1)


def hex_value(text: str, pattern: str) -> int:
    match = re.search(pattern, text)
    assert match, f"/{pattern}/ not found in:\n{text}"
    return int(match.group(1), 16)


# --------------------------------------------------------------------------- test session


class E2E:
    """What a test uses: build programs, start servers and gdb, all cleaned up after it."""

    def __init__(self, server: ServerBinary, programs: Programs, tmp: Path) -> None:
        self.server_bin = server
        self.programs = programs
        self.tmp = tmp
        self.reaper = Reaper()
        self.servers: list[Server] = []

    @property
    def is_gdbserver(self) -> bool:
        return self.server_bin.is_gdbserver

    def program(self, name: str, pie: bool = True) -> Path:
        return self.programs.path(name, pie)

    def line(self, name: str, mark: str) -> int:
        return self.programs.line(name, mark)

    # servers

    def start_server(self, *args: str, launcher: tuple[str, ...] = (), tty: bool = False) -> Server:
        """[LAUNCHER] SERVER [common options] ARGS..., without waiting for anything
        (LAUNCHER: a command that runs the server, e.g. prlimit with its options and --;
        tty: on a terminal of its own, see Server)."""
        argv = [*launcher, self.server_bin.path, *self.server_bin.common_options(), *args]
        server = Server(argv, self.reaper, tty=tty)
        self.servers.append(server)
        return server

    def _listening(self, server: Server) -> Server:
        server.port = int(server.wait_for(LISTENING).group(1))
        return server

    def serve(
        self, program: Path, *args: str, options: tuple[str, ...] = (), launcher: tuple[str, ...] = (),
        tty: bool = False,
    ) -> Server:
        """Server on an ephemeral TCP port with PROG created and stopped at its entry."""
        server = self.start_server(*options, ":0", str(program), *args, launcher=launcher, tty=tty)
        server.wait_for(INFERIOR_CREATED)
        return self._listening(server)

    def serve_multi(self) -> Server:
        return self._listening(self.start_server("--multi", ":0"))

    def serve_attach(self, pid: int, *options: str, after_comm: bool = False) -> Server:
        """A server attached to PID; with after_comm, as `OPTIONS :0 --attach PID` (the order
        gdb's testsuite uses) rather than `OPTIONS --attach :0 PID`."""
        argv = [":0", "--attach"] if after_comm else ["--attach", ":0"]
        return self._listening(self.start_server(*options, *argv, str(pid)))

    def pty_pair(self) -> tuple[str, str]:
        """Two connected pseudo-terminals, like a null-modem cable between two serial ports."""
        socat = Server(["socat", "-d", "-d", "pty,raw,echo=0", "pty,raw,echo=0"], self.reaper)
        socat.wait_for(r"starting data transfer loop")  # printed after both ends exist
        ends = re.findall(r"PTY is (/dev/pts/\d+)", socat.output)
        assert len(ends) == 2, socat.output
        return ends[0], ends[1]

    # gdb

    def gdb_start(self, *commands: str, program: Path | None = None, tty: bool = False) -> Gdb:
        return Gdb(list(commands), program, self.reaper, tty=tty)

    def gdb(self, *commands: str, program: Path | None = None, timeout: float = GDB_TIMEOUT) -> GdbResult:
        """Run gdb -batch with these commands to completion."""
        return self.show(self.gdb_start(*commands, program=program).wait(timeout=timeout))

    def command_file(self, *lines: str) -> str:
        """A "source FILE" command running these lines: gdb -batch reads the body of a
        multi-line command (actions, while, if) from a file, never from further -ex."""
        path = self.tmp / f"commands-{len(list(self.tmp.glob('commands-*.gdb')))}.gdb"
        path.write_text("".join(f"{line}\n" for line in lines))
        return f"source {path}"

    @staticmethod
    def show(result: GdbResult) -> GdbResult:
        # pytest prints captured output for failing tests only: the whole transcript.
        print(f"=== gdb transcript (exit status {result.returncode})\n{result.transcript}")
        return result

    # other processes

    def spawn(self, *argv: str) -> subprocess.Popen:
        """A program run outside any debugger (e.g. one to attach to later)."""
        proc = subprocess.Popen(argv, stdin=subprocess.DEVNULL, start_new_session=True)
        self.reaper.track_popen(proc)
        return proc

    def wait_for_file(self, path: Path, content: str | None = None, timeout: float = WAIT_TIMEOUT) -> None:
        """Wait until path exists (and holds exactly content, if given)."""

        def there() -> bool:
            try:
                text = path.read_text()
            except FileNotFoundError:
                return False
            return content is None or text == content

        assert wait_until(there, timeout), f"{path} never appeared" + (f" with {content!r}" if content else "")

    def close(self) -> list[str]:
        """Kill everything the test started; return what refused to die."""
        for server in self.servers:
            print(f"--- {' '.join(server.argv)}\n{server.output}")
        self.reaper.kill_all()
        return self.reaper.survivors()
