"""pytest fixtures for the end-to-end tests; see harness.py for the machinery."""

import pytest

import harness
from debug_registers import SKIP_EXIT_CODE
from harness import E2E, Programs, closing, use_scratch


def find_server():
    try:
        return harness.find_server()
    except RuntimeError as error:  # a plain message instead of an internal error
        raise pytest.UsageError(str(error)) from None


def pytest_configure(config):
    config.addinivalue_line("markers", "hw_watchpoint: needs x86 debug registers (deselect with -m 'not hw_watchpoint')")
    config.addinivalue_line("markers", "tpagent_only: checks tpagent's documented behaviour where gdbserver differs")
    config.addinivalue_line("markers", "stress: long-running stress tests (deselect with -m 'not stress')")
    # ctest gives each test file its own scratch directory in the build tree.
    use_scratch(config, "TPAGENT_E2E_SCRATCH")


@pytest.fixture(scope="session")
def server_bin():
    return find_server()


@pytest.fixture(scope="session")
def programs(tmp_path_factory):
    return Programs(tmp_path_factory.mktemp("programs"))


@pytest.fixture
def e2e(server_bin, programs, tmp_path):
    yield from closing(E2E(server_bin, programs, tmp_path))


def pytest_collection_modifyitems(config, items):
    if find_server().is_gdbserver:
        for item in items:
            marker = item.get_closest_marker("tpagent_only")
            if marker is not None:
                why = marker.args[0] if marker.args else "gdbserver differs here"
                item.add_marker(pytest.mark.skip(reason=f"tpagent's own behaviour: {why}"))


def pytest_report_header(config):
    server = find_server()
    return f"e2e server: {server.name} ({server.path})"


# A run whose every test was skipped (say, no working debug registers) ends with the exit
# code ctest counts as skipped, so it shows as skipped there rather than passed.
_outcomes = {"passed": 0, "failed": 0, "skipped": 0}


def pytest_runtest_logreport(report):
    if report.when == "call" or report.outcome != "passed":
        _outcomes[report.outcome] = _outcomes.get(report.outcome, 0) + 1


def pytest_sessionfinish(session, exitstatus):
    if exitstatus == 0 and _outcomes["skipped"] and not _outcomes["passed"] and not _outcomes["failed"]:
        session.exitstatus = SKIP_EXIT_CODE
