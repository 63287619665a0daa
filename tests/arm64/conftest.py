"""pytest fixtures for the arm64 tests (see README.md): one emulated board per session, and
every test run against each stub on it (tpagent and Debian's gdbserver) unless marked
tpagent_only. The machinery is board.py over the e2e harness (tests/e2e)."""

from __future__ import annotations

import os
import shutil
import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "e2e"))

from board import REPO, SERVERS, Board, BoardE2E, BoardScenario  # noqa: E402
from harness import assert_in_order, closing, use_scratch  # noqa: E402


# The boards this session booted (for the summary).
BOOTED: list[Board] = []


def selected_servers() -> list[str]:
    """TPAGENT_ARM64_SERVERS: the stubs to test, comma-separated (default both)."""
    names = [n.strip() for n in os.environ.get("TPAGENT_ARM64_SERVERS", "tpagent,gdbserver").split(",") if n.strip()]
    unknown = [n for n in names if n not in SERVERS]
    if unknown or not names:
        raise pytest.UsageError(f"TPAGENT_ARM64_SERVERS: {unknown or names} (known: {', '.join(SERVERS)})")
    return names


def tpagent_binary() -> Path:
    value = os.environ.get("TPAGENT_ARM64_BIN")
    if not value:
        raise pytest.UsageError(
            "TPAGENT_ARM64_BIN is not set: it names the arm64 tpagent to test, e.g. "
            "TPAGENT_ARM64_BIN=build/arm64/bin/tpagent (cmake --preset arm64 && cmake --build --preset arm64)"
        )
    path = Path(value).resolve()
    if not path.is_file():
        raise pytest.UsageError(f"TPAGENT_ARM64_BIN={value}: no such file (cmake --build --preset arm64 builds it)")
    return path


def pytest_configure(config):
    config.addinivalue_line("markers", "tpagent_only(why): tpagent's own feature; skipped for gdbserver")
    config.addinivalue_line("markers", "hw_watchpoint: needs the board's debug registers (skipped if they fail)")
    use_scratch(config, "TPAGENT_ARM64_SCRATCH")
    if "tpagent" in selected_servers():  # both check the environment before anything runs
        tpagent_binary()


def pytest_collection_modifyitems(config, items):
    for item in items:
        marker = item.get_closest_marker("tpagent_only")
        server = getattr(item, "callspec", None) and item.callspec.params.get("server_bin")
        if marker is not None and server == "gdbserver":
            why = marker.args[0] if marker.args else "gdbserver does not do this"
            item.add_marker(pytest.mark.skip(reason=f"tpagent only: {why}"))


@pytest.fixture(scope="session")
def board(tmp_path_factory):
    """The board, booted once: the programs cross-compiled and tpagent copied into its payload."""
    payload = tmp_path_factory.mktemp("payload", numbered=False)
    cache = Path(os.environ.get("TPAGENT_ARM64_BOARD_CACHE") or REPO / "build" / "arm64-board")
    the_board = Board(cache.resolve(), payload, tmp_path_factory.mktemp("board", numbered=False))
    the_board.build_payload()
    if "tpagent" in selected_servers():
        shutil.copy2(tpagent_binary(), payload / "tpagent")
        # The in-process agent for fast tracepoints, next to tpagent as `--inproc` expects, and
        # its image, which tpagent places in a program that has no agent at tstart.
        for name in ("libtpagent-inproc.so", "libtpagent-inproc-image.so"):
            agent = tpagent_binary().parent / name
            if agent.is_file():
                shutil.copy2(agent, payload / agent.name)
    the_board.fetch()
    the_board.start()
    BOOTED.append(the_board)
    try:
        yield the_board
    finally:
        the_board.stop()


def pytest_generate_tests(metafunc):
    if "server_bin" in metafunc.fixturenames:
        metafunc.parametrize("server_bin", selected_servers(), indirect=True, scope="session")


@pytest.fixture(scope="session")
def server_bin(request):
    """The stub under test: each of TPAGENT_ARM64_SERVERS in turn."""
    return SERVERS[request.param]


@pytest.fixture
def arm64(board, server_bin, tmp_path):
    """The e2e harness on the board, for one stub (the test's parameter)."""
    yield from closing(BoardE2E(board, server_bin, tmp_path))


@pytest.fixture
def both(board, tmp_path):
    """The harness for each stub, side by side: {"tpagent": ..., "gdbserver": ...}."""
    if set(selected_servers()) != set(SERVERS):
        pytest.skip("compares tpagent with gdbserver: needs both in TPAGENT_ARM64_SERVERS")
    sessions = {}
    for name, server in SERVERS.items():
        (tmp_path / name).mkdir()
        sessions[name] = BoardE2E(board, server, tmp_path / name)
    yield from closing(sessions, *sessions.values())


@pytest.fixture(scope="session")
def hw_debug(board, tmp_path_factory):
    """Whether the board's hardware watchpoints work, asked of gdbserver (the reference): a
    watchpoint on basic.c's `watched` must trigger. Skips the test when it does not."""
    session = BoardE2E(board, SERVERS["gdbserver"], tmp_path_factory.mktemp("hw-probe"))
    try:
        r = BoardScenario(session, "basic").gdb("break main", "continue", "watch watched", "continue", "kill")
        assert_in_order(r.of("continue", 1), r"^Hardware watchpoint 2: watched$", r"^New value = 10$")
        works, why = True, ""
    except AssertionError as error:
        works, why = False, str(error)
    finally:
        session.close()
    kernel = board.run("dmesg | grep hw-breakpoint").stdout.strip()
    if not works:
        pytest.skip(f"the board's hardware watchpoints do not work under this qemu ({kernel}): {why[:2000]}")
    return kernel


def pytest_terminal_summary(terminalreporter):
    for the_board in BOOTED:
        terminalreporter.write_line(f"arm64 board: booted in {the_board.boot_seconds:.1f} s (initramfs included)")


def pytest_report_header(config):
    servers = selected_servers()
    binary = os.environ.get("TPAGENT_ARM64_BIN", "-")
    return f"arm64 board tests against: {', '.join(servers)} (TPAGENT_ARM64_BIN={binary})"
