"""The arm64 board under the end-to-end tests: scripts/arm64-board.sh's emulated board, booted
once per pytest session, and the e2e harness (tests/e2e/harness.py, scenario.py) pointed at
it, so that a test reads like an e2e test: `s = BoardScenario(arm64, "traced", "4")`,
`r = s.gdb(*TO_MAIN, define, *trace_to("finished"), ...)`, the same builders and parsers.

- `Board`: the script's fetch/start/run/spawn/port/stop; `run()` gives a CompletedProcess
  (stdout: the command's output, stderr merged), `fetch_file()` copies a board file to the
  host (base64 over `run`), `monotonic_ns()` is the board's CLOCK_MONOTONIC, `leftovers()`
  the stubs and programs still alive on it. `payload` is the host folder the board sees as
  /payload (also gdb's sysroot/payload), `sysroot` what gdb's `set sysroot` names.
- `BoardServer`: a stub (`tpagent` or `gdbserver`) started on the board with `spawn`,
  listening on a forwarded port; quacks like harness.Server (`port`, `remote`,
  `inferior_pid`, `output`, `wait_for()`), and `kill()` ends it and its programs.
- `BoardE2E`: harness.E2E for the board (the `arm64` fixture): `serve()` spawns the stub
  on the next forwarded port, `gdb()` runs gdb-multiarch with the board's sysroot, `close()`
  kills the stub (via `run`), gdb, and reports what survived on either side;
  `board_command()` is a gdb `shell` command running a command on the board.
- `BoardScenario`: scenario.Scenario whose native reference run happens on the board.
"""

from __future__ import annotations

import base64
import functools
import os
import re
import shlex
import shutil
import subprocess
import time
from pathlib import Path

from harness import (
    GDB_INIT,
    INFERIOR_CREATED,
    WAIT_TIMEOUT,
    E2E,
    Gdb,
    Programs,
    Server,
    ServerBinary,
    compile_program,
    gdb_argv,
    wait_until,
)
from scenario import Scenario

ARM64_DIR = Path(__file__).resolve().parent
REPO = ARM64_DIR.parents[1]
BOARD_SCRIPT = REPO / "scripts" / "arm64-board.sh"
CROSS_COMPILER = "aarch64-linux-gnu-gcc"
GDB = "gdb-multiarch"
# Every program the tests run, built into the payload before the board boots (the payload
# is part of its initramfs).
PROGRAMS = (
    "basic", "branches", "traced", "traced_threads", "passcount", "sve", "no_pad_room", "ftrace_loop", "ftrace_threads",
    "a64_pc_relative", "a64_exclusive", "a64_vector", "a64_streaming", "cond_breaks",
    "tls_vars", "own_traps",
)
# Built with -ldl (glibc 2.36 has dlopen in libc; the flag keeps older ones working).
DLOPEN_PROGRAMS = ("ftrace_dlopen",)
# Programs also built -fno-pie -no-pie (NAME-nopie).
NON_PIE = ("ftrace_loop",)
# Builds of them with more flags: NAME -> (program, flags). traced.c in the tiny code model
# reaches its globals with ADR and the GOT with LDR (literal), where the small one uses ADRP.
# sdt_markers: <sys/sdt.h> is systemtap-sdt-dev's, in the host's multiarch folder (it is plain
# assembler directives, for either ISA). ftrace_loop_static: no dynamic loader, so the
# in-process agent can only be tpagent's image; ftrace_loop_musl_static: the same against musl
# (Debian's musl-dev:arm64, through its gcc specs; left out without it); ftrace_loop_musl:
# dynamic against musl, whose loader (musl's libc.so itself) the board has in /payload.
VARIANTS = {
    "traced_tiny": ("traced", ("-mcmodel=tiny",)),
    "sdt_markers": ("sdt_markers", ("-idirafter", "/usr/include/x86_64-linux-gnu")),
    "fork_server": ("fork_server", ("-idirafter", "/usr/include/x86_64-linux-gnu")),
    "ftrace_loop_static": ("ftrace_loop", ("-static",)),
}
MUSL_SPECS = Path("/usr/lib/aarch64-linux-musl/musl-gcc.specs")
MUSL_LOADER = "/payload/ld-musl-aarch64.so.1"
if MUSL_SPECS.exists():
    VARIANTS["ftrace_loop_musl_static"] = ("ftrace_loop", ("-specs", str(MUSL_SPECS), "-static"))
    VARIANTS["ftrace_loop_musl"] = ("ftrace_loop", ("-specs", str(MUSL_SPECS), f"-Wl,--dynamic-linker={MUSL_LOADER}"))
# The stubs on the board: tpagent is copied into the payload, gdbserver is Debian's.
TPAGENT = "/payload/tpagent"
GDBSERVER = "/usr/bin/gdbserver"
SERVERS = {
    "tpagent": ServerBinary(path=TPAGENT, is_gdbserver=False),
    "gdbserver": ServerBinary(path=GDBSERVER, is_gdbserver=True),
}
# Upper bound for one `run` on the board (the script's own limit is one more second).
RUN_TIMEOUT = 120


class Board:
    """scripts/arm64-board.sh on CACHE (fetch), PAYLOAD (the board's /payload) and STATE."""

    def __init__(self, cache: Path, payload: Path, state: Path) -> None:
        self.cache, self.payload, self.state = cache, payload, state
        self.programs = Programs(payload, compiler=CROSS_COMPILER)
        self._ports: dict[str, tuple[int, int]] = {}  # NAME -> (host port, board port)
        self._next_stub = 0
        self._spawned = 0
        self.boot_seconds: float | None = None

    def _script(self, *args: str, timeout: float, env: dict[str, str] | None = None) -> subprocess.CompletedProcess:
        """arm64-board.sh ARGS, its output captured; TIMEOUT bounds it on the host side."""
        return subprocess.run(
            ["bash", str(BOARD_SCRIPT), *args],
            stdin=subprocess.DEVNULL,
            capture_output=True,
            text=True,
            errors="replace",
            timeout=timeout,
            env={**os.environ, "ARM64_BOARD_TIMEOUT": str(RUN_TIMEOUT), **(env or {})},
        )

    def _checked(self, *args: str, timeout: float, env: dict[str, str] | None = None) -> subprocess.CompletedProcess:
        done = self._script(*args, timeout=timeout, env=env)
        if done.returncode != 0:
            output = done.stdout + done.stderr
            raise RuntimeError(f"arm64-board.sh {args[0]} failed ({done.returncode}):\n{output}")
        return done

    # the board's life

    def build_payload(self) -> None:
        """The programs and their variants, cross-compiled into the payload."""
        for name in PROGRAMS:
            self.programs.path(name)
        for name in NON_PIE:
            self.programs.path(name, pie=False)
        for name in DLOPEN_PROGRAMS:
            compile_program(Programs.source(name), self.payload / name, link=("-ldl",), compiler=CROSS_COMPILER)
        for name, (program, flags) in VARIANTS.items():
            compile_program(Programs.source(program), self.payload / name, *flags, compiler=CROSS_COMPILER)
        if MUSL_SPECS.exists():
            shutil.copy(MUSL_SPECS.parent / "libc.so", self.payload / Path(MUSL_LOADER).name)
        # ftrace_shlib against libftrace_lib.so, which the board finds in /payload.
        compile_program(
            Programs.source("ftrace_lib"), self.payload / "libftrace_lib.so", "-fPIC", "-shared", compiler=CROSS_COMPILER
        )
        link = (f"-L{self.payload}", "-lftrace_lib", "-Wl,-rpath,/payload")
        compile_program(Programs.source("ftrace_shlib"), self.payload / "ftrace_shlib", link=link, compiler=CROSS_COMPILER)
        # a64_bti against liba64_bti_lib.so, BTI-marked: no start files (Debian's are not marked,
        # and a marked object must be so throughout).
        bti = ("-fPIC", "-shared", "-nostartfiles", "-mbranch-protection=standard")
        compile_program(Programs.source("a64_bti_lib"), self.payload / "liba64_bti_lib.so", *bti, compiler=CROSS_COMPILER)
        link = (f"-L{self.payload}", "-la64_bti_lib", "-Wl,-rpath,/payload")
        compile_program(Programs.source("a64_bti"), self.payload / "a64_bti", link=link, compiler=CROSS_COMPILER)
        self.build_go_program("ftrace_goroutines")

    def build_go_program(self, name: str) -> None:
        """programs/NAME.go built for arm64, static without cgo, when the host has Go (Debian's
        golang-go; the test that runs it skips without it)."""
        go = shutil.which("go")
        if go is None:
            return
        env = {**os.environ, "GOARCH": "arm64", "CGO_ENABLED": "0", "GO111MODULE": "off", "GOFLAGS": "",
               "GOCACHE": str(self.state / "go-cache"), "GOPATH": str(self.state / "go-path")}
        source = Programs.source(name).with_suffix(".go")
        done = subprocess.run([go, "build", "-o", str(self.payload / name), str(source)], capture_output=True,
                              text=True, timeout=900, env=env)
        if done.returncode != 0:
            raise RuntimeError(f"go build {source} failed:\n{done.stdout}{done.stderr}")

    def fetch(self) -> None:
        """The kernel, userland and host tools, unless CACHE holds them already."""
        self._checked("fetch", str(self.cache), timeout=1800)

    def start(self) -> None:
        """Boots the board with PAYLOAD; qemu dies with this process (ARM64_BOARD_OWNER_PID)."""
        began = time.monotonic()
        env = {"ARM64_BOARD_OWNER_PID": str(os.getpid())}
        self._checked("start", str(self.cache), str(self.payload), str(self.state), timeout=300, env=env)
        self.boot_seconds = time.monotonic() - began
        for line in (self.state / "ports").read_text().splitlines():
            name, host, board = line.split()
            self._ports[name] = (int(host), int(board))

    def stop(self) -> None:
        self._script("stop", str(self.state), timeout=60)

    @property
    def sysroot(self) -> Path:
        return self.state / "sysroot"

    def next_stub(self) -> tuple[int, int]:
        """(host port, board port) of the next forwarded stub port, round robin: a port the
        previous tests no longer use."""
        stubs = sorted(name for name in self._ports if name.startswith("stub"))
        name = stubs[self._next_stub % len(stubs)]
        self._next_stub += 1
        return self._ports[name]

    # commands on the board

    def run(self, command: str, timeout: float = RUN_TIMEOUT) -> subprocess.CompletedProcess:
        """COMMAND with /bin/sh on the board, in /payload: its output (stderr merged) and its
        exit status; 255 when the board could not be reached."""
        limit = {"ARM64_BOARD_TIMEOUT": str(timeout)}
        done = self._script("run", str(self.state), command, timeout=timeout + 10, env=limit)
        return subprocess.CompletedProcess(command, done.returncode, done.stdout, done.stderr)

    def checked_run(self, command: str) -> str:
        done = self.run(command)
        assert done.returncode == 0, f"on the board: {command}\nexit {done.returncode}:\n{done.stdout}{done.stderr}"
        return done.stdout

    def spawn(self, name: str, command: str) -> subprocess.CompletedProcess:
        """COMMAND in the background (log /tmp/NAME.log, pid /tmp/NAME.pid), once its log
        says 'Listening on port'."""
        return self._script("spawn", str(self.state), name, command, timeout=RUN_TIMEOUT + 10)

    def spawn_name(self) -> str:
        self._spawned += 1
        return f"stub{self._spawned}"

    def native_run(self, program: Path, *args: str) -> subprocess.CompletedProcess:
        """PROGRAM (a payload file) run on the board with ARGS and no debugger."""
        return self.run(shlex.join([f"/payload/{program.name}", *args]))

    def fetch_file(self, board_path: str, host_path: Path) -> Path:
        """Copies BOARD_PATH to HOST_PATH, byte for byte."""
        host_path.write_bytes(base64.b64decode(self.checked_run(f"base64 {shlex.quote(board_path)}")))
        return host_path

    def monotonic_ns(self) -> int:
        """The board's CLOCK_MONOTONIC (the kernel's ktime_get(), from /proc/timer_list)."""
        text = self.checked_run("head -n 3 /proc/timer_list")
        return int(re.search(r"^now at (\d+) nsecs$", text, re.M).group(1))

    def leftovers(self, timeout: float = 5) -> list[str]:
        """'PID EXE' of every stub or payload program still alive on the board, after
        waiting up to TIMEOUT for them to go."""
        listing = (
            "for d in /proc/[0-9]*; do e=$(readlink $d/exe 2>/dev/null) || continue; "
            f'case "$e" in /payload/*|{GDBSERVER}) echo "${{d#/proc/}} $e";; esac; done'
        )
        found: list[str] = []

        def gone() -> bool:
            found[:] = self.run(listing).stdout.split("\n")
            found[:] = [line for line in found if line.strip()]
            return not found

        wait_until(gone, timeout=timeout, interval=0.5)
        return found

    def command_line(self, *args: str) -> str:
        """The shell command line running arm64-board.sh with ARGS (for gdb's `shell`)."""
        return shlex.join(["bash", str(BOARD_SCRIPT), *args])


class BoardServer:
    """A stub running on the board, its output in the board's /tmp/NAME.log. Speaks like
    harness.Server where the tests need it."""

    def __init__(self, board: Board, name: str, argv: list[str], host_port: int) -> None:
        self.board, self.name, self.argv = board, name, argv
        self.port = host_port
        self.inferior_pids: list[int] = []
        self._lines: list[str] = []
        started = board.spawn(name, shlex.join(argv))
        self._take(started.stdout)
        output = started.stdout + started.stderr
        assert started.returncode == 0, f"{' '.join(argv)} did not start on the board:\n{output}"
        self.pid = int(board.checked_run(f"cat /tmp/{name}.pid"))

    def _take(self, log: str) -> None:
        self._lines = log.splitlines()
        self.inferior_pids = [int(pid) for pid in INFERIOR_CREATED.findall(log)]

    def refresh(self) -> str:
        """The stub's output so far (and its programs': they share its stdout), read again."""
        done = self.board.run(f"cat /tmp/{self.name}.log")
        if done.returncode == 0:
            self._take(done.stdout)
        return "\n".join(self._lines)

    output = property(refresh)
    # harness.Server's, which need only the attributes above.
    inferior_pid = Server.inferior_pid
    remote = Server.remote
    extended_remote = Server.extended_remote

    def wait_for(self, pattern: str | re.Pattern, timeout: float = WAIT_TIMEOUT, after: int = 0) -> re.Match:
        """Wait for a line matching PATTERN, looking only at lines numbered >= AFTER."""
        regex = re.compile(pattern) if isinstance(pattern, str) else pattern
        found: list[re.Match] = []

        def seen() -> bool:
            self.refresh()
            found[:] = [m for line in self._lines[after:] if (m := regex.search(line))][:1]
            return bool(found)

        ok = wait_until(seen, timeout=timeout, interval=0.3)
        assert ok, f"server never printed /{regex.pattern}/:\n{self.output}"
        return found[0]

    def running(self) -> bool:
        alive = f"[ -d /proc/{self.pid} ] && ! grep -q '^State:.*Z' /proc/{self.pid}/status"
        return self.board.run(alive).returncode == 0

    def kill(self) -> None:
        """SIGKILL to the stub and to each program it started."""
        self.refresh()  # the last inferior pids
        pids = " ".join(str(pid) for pid in [self.pid, *self.inferior_pids])
        self.board.run(f"kill -9 {pids} 2>/dev/null; true")


class BoardE2E(E2E):
    """The harness's E2E with its servers on the board and gdb-multiarch on the host."""

    def __init__(self, board: Board, server: ServerBinary, tmp: Path) -> None:
        super().__init__(server, board.programs, tmp)
        self.board = board
        # gdb reads the board's libraries and programs from the sysroot: that is all tpagent
        # needs. gdb's arm64 unwinder reads code in trace frames (which hold none); gdbserver
        # serves only QTro's ranges, the executable's read-only sections at link-time
        # addresses, so with it, in a PIE or a library, `print iteration` in a frame that
        # collected it says <unavailable> unless gdb reads code from the files itself.
        sysroot = f"set sysroot {board.sysroot}"
        self.gdb_init = tuple(sysroot if o == "set sysroot /" else o for o in GDB_INIT)
        self.files_init = (*self.gdb_init, "set trust-readonly-sections on")
        if server.is_gdbserver:
            self.gdb_init = self.files_init

    def serve(
        self, program: Path, *args: str, options: tuple[str, ...] = (), launcher: tuple[str, ...] = ()
    ) -> BoardServer:
        """The stub on the board listening on the next forwarded port, PROGRAM (from the
        payload) created and stopped at its entry."""
        host_port, board_port = self.board.next_stub()
        argv = [
            *launcher,
            self.server_bin.path,
            *self.server_bin.common_options(),
            *options,
            f"0.0.0.0:{board_port}",
            f"/payload/{program.name}",
            *args,
        ]
        server = BoardServer(self.board, self.board.spawn_name(), argv, host_port)
        self.servers.append(server)
        return server

    def gdb_start(self, *commands: str, program: Path | None = None, tty: bool = False) -> Gdb:
        # A trace file (target tfile) has no stub behind it: gdb unwinds its frames of a PIE
        # with code it reads from the files, which it does only with trust-readonly-sections.
        reads_a_file = any(c.startswith("target tfile") for c in commands)
        argv = gdb_argv(list(commands), program, gdb=GDB, init=self.files_init if reads_a_file else self.gdb_init)
        return Gdb(list(commands), program, self.reaper, tty=tty, argv=argv)

    def board_command(self, command: str) -> str:
        """A gdb command running COMMAND on the board (e.g. creating a file a program waits for)."""
        return "shell " + self.board.command_line("run", str(self.board.state), command)

    def close(self) -> list[str]:
        survivors = super().close()
        for server in self.servers:
            server.kill()
        return survivors + [f"on the board: {line}" for line in self.board.leftovers()]


class BoardScenario(Scenario):
    """scenario.Scenario on the board: the program runs under the stub there, and its native
    reference run (`reference`, `ends_as_natively()`) happens there too."""

    @functools.cached_property
    def reference(self) -> subprocess.CompletedProcess:
        return self.e2e.board.native_run(self.program, *self.args)


class BoardFastTrace(BoardScenario):
    """scenario.FastTrace on the board: tpagent's in-process agent preloaded from /payload
    (the arm64 build of libtpagent-inproc.so, next to tpagent), PIE unless pie=False."""

    quiet_tstart = True

    def __init__(self, e2e: BoardE2E, name: str, *args: str, options: tuple[str, ...] = (), **kwargs) -> None:
        library = e2e.board.payload / "libtpagent-inproc.so"
        assert library.is_file(), f"no arm64 in-process agent at {library} (cmake --build --preset arm64 builds it)"
        options = ("--wrapper", "env", f"LD_PRELOAD=/payload/{library.name}", "--", *options)
        super().__init__(e2e, name, *args, options=options, **kwargs)
