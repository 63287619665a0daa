"""`info os` (qXfer:osdata:read): the system's tables as gdbserver gives them: the types,
processes, process groups, threads, open files, internet sockets, System V shared memory,
semaphores and message queues, kernel modules and CPUs. Runs against both stubs."""

import os
import re
import subprocess

import pytest

from harness import assert_in_order
from scenario import Scenario

PROGRAM = "basic"
TYPES = ["cpus", "files", "modules", "msg", "processes", "procgroups", "semaphores", "shm", "sockets", "threads"]


def row(*cells: str) -> re.Pattern:
    """A line of gdb's table with CELLS in this order, columns apart."""
    return re.compile(r"^" + r"\s+".join(re.escape(c) for c in cells) + r"(\s|$)", re.M)


@pytest.fixture
def ipc_objects():
    """A shared-memory region, a semaphore set and a message queue of our own (ipcmk)."""
    made = {}
    for kind, option in (("shm", "-M"), ("sem", "-S"), ("msg", "-Q")):
        args = [option, "4096"] if kind == "shm" else [option, "3"] if kind == "sem" else [option]
        out = subprocess.run(["ipcmk", *args], capture_output=True, text=True, check=True).stdout
        made[kind] = re.search(r"id: (\d+)", out).group(1)
    yield made
    for kind, option in (("shm", "-m"), ("sem", "-s"), ("msg", "-q")):
        subprocess.run(["ipcrm", option, made[kind]], check=False)


def test_info_os_tables(e2e, ipc_objects):
    s = Scenario(e2e, PROGRAM)
    pid = str(s.pid)
    tables = {t: f"info os {t}" for t in TYPES}
    r = s.gdb("info os", *tables.values())
    assert_in_order(r.of("info os"), r"Type\s+Description", *(rf"^{t}\s+Listing of all" for t in TYPES))
    assert row(pid, "root", str(s.program)).search(r.of(tables["processes"])), r.of(tables["processes"])
    assert row(pid, "basic", pid).search(r.of(tables["threads"])), r.of(tables["threads"])
    assert re.search(rf"^\d+\s+\S+\s+{pid}\s+{re.escape(str(s.program))}", r.of(tables["procgroups"]), re.M)
    assert row(pid, "basic", "0").search(r.of(tables["files"])), r.of(tables["files"])
    # The server's own listening socket.
    assert re.search(rf"\s{s.server.port}\s+0\.0\.0\.0\s+0\s+LISTEN\s+root\s+INET\s+STREAM|"
                     rf"\s{s.server.port}\s+\S+\s+0\s+LISTEN\s+root\s+INET6?\s+STREAM", r.of(tables["sockets"])), \
        r.of(tables["sockets"])
    assert re.search(rf"^-?\d+\s+{ipc_objects['shm']}\s+644\s+4096\s", r.of(tables["shm"]), re.M), r.of(tables["shm"])
    assert re.search(rf"^-?\d+\s+{ipc_objects['sem']}\s+644\s+3\s+root\s+root", r.of(tables["semaphores"]), re.M)
    assert re.search(rf"^-?\d+\s+{ipc_objects['msg']}\s+644\s+0\s+0\s", r.of(tables["msg"]), re.M)
    cpus = re.findall(r"^\d+\s", r.of(tables["cpus"]), re.M)
    assert len(cpus) == os.cpu_count(), r.of(tables["cpus"])
    assert "processor" in r.of(tables["cpus"]).splitlines()[0]


def test_an_unknown_type_is_named_wrong(e2e):
    """`info os` of a type the stub does not have: an empty table, which gdb names a wrong
    type (gdb.base/info-os.exp); an error reply left gdb saying only that it cannot fetch
    the data."""
    r = Scenario(e2e, PROGRAM).gdb("info os unknown_entry", "info os cpus")
    assert_in_order(r.of("info os unknown_entry"), r"Empty data returned by target\.  Wrong osdata type\?",
                    r"Can not fetch data now\.")
    assert "processor" in r.of("info os cpus")  # the session goes on
