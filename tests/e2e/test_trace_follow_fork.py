"""A trace that follows a server's forked children (--trace-follow-fork, `monitor set
trace-follow-fork on`): children forked during the run keep the fast tracepoints and their
frames go into the same trace, each naming its process ($trace_pid) and thread; counts are
exact, through tsave -r and disconnected tracing; an exec'd child leaves the trace; the program
serves every request right. Off (the default), a child runs on untraced.

programs/fork_server.c: `prefork W R` (W workers, each R requests on two threads, the parent R),
`per-request W R` (W*R children one after the other, every fifth one exec'ing), `forever` (one
child a millisecond until a file exists).
"""

import os
import re
import shutil
import socket
import subprocess
import tempfile
from collections import defaultdict
from pathlib import Path

import pytest

from harness import assert_in_order, wait_until
from scenario import TO_MAIN, FastTrace, Scenario, ftrace, past_gdb_strace_m_crashes, trace_to

PROGRAM = "fork_server"
FOLLOW = ("--trace-follow-fork",)


def define(s: FastTrace, kind: str = "ftrace") -> str:
    """The fast tracepoint at serve()'s MARK line, or (strace) the static one at its marker."""
    collect = "collect $trace_pid, $trace_thread, worker, request"
    tracepoint = (ftrace(s.at("serve_entry"), collect) if kind == "ftrace"
                  else ("strace -m fork_server:serve", "actions", collect, "end"))
    return s.define("tvariable $trace_pid", "tvariable $trace_thread", tracepoint)


def rows_by_process(rows) -> dict[int, list[tuple[int, int, int]]]:
    """A walk's rows (frame, tp, pid, tid, worker, request) by process: (tid, worker, request)."""
    by = defaultdict(list)
    for _frame, _tp, pid, tid, worker, request in rows:
        by[pid].append((tid, worker, request))
    return by


def hit_count(info_tracepoints: str) -> int:
    return int(re.search(r"tracepoint already hit (\d+) times?", info_tracepoints).group(1))


@pytest.mark.tpagent_only("gdbserver's trace is the one process's")
@pytest.mark.parametrize("kind", ["ftrace", "strace"])
def test_prefork_workers_collect_into_the_trace(e2e, kind):
    """Three workers forked during the run, each serving 5 requests on its main thread and 5 on
    a thread of its own, the parent 5: 35 frames, 5 the parent's and 10 each worker's (from two
    threads, one of them the worker's main thread), in one trace, the hit count the same; a
    tsave -r file holds them all; the workers' checksums come out right. The same from a fast
    tracepoint and from a static one at the SDT marker there."""
    saved = e2e.tmp / "prefork.tf"
    walks = {}

    def run():
        s = FastTrace(e2e, PROGRAM, "prefork", "3", "5", options=FOLLOW)
        walks["walk"] = s.walk("$trace_pid", "$trace_thread", "worker", "request")
        return s, s.gdb(*TO_MAIN, define(s, kind), *trace_to("all_served"), "info tracepoints",
                        walks["walk"], f"tsave -r {saved}", "tfind none", "delete", "continue")

    s, r = run() if kind == "ftrace" else past_gdb_strace_m_crashes(run)
    walk = walks["walk"]
    by = rows_by_process(r.frames(walk))
    assert sorted(len(v) for v in by.values()) == [5, 10, 10, 10], {p: len(v) for p, v in by.items()}
    assert sorted(w for _t, w, _r in by[s.pid]) == [-1] * 5
    assert {t for t, _w, _r in by[s.pid]} == {s.pid}
    workers = {p: v for p, v in by.items() if p != s.pid}
    assert sorted({w for v in workers.values() for _t, w, _r in v}) == [0, 1, 2]
    for pid, hits in workers.items():
        assert len({w for _t, w, _r in hits}) == 1, hits
        assert sorted(r_ for _t, _w, r_ in hits) == [0, 1, 2, 3, 4, 1000, 1001, 1002, 1003, 1004]
        threads = {t for t, _w, _r in hits}
        assert len(threads) == 2 and pid in threads, (pid, threads)
    assert r.status().collected == 35, r.status()
    assert hit_count(r.of("info tracepoints")) == 35, r.of("info tracepoints")
    s.server.wait_for(r"^served 3 bad 0$")
    assert_in_order(r.of("continue", 2), rf"^\[Inferior 1 \(process {s.pid}\) exited normally\]$")
    # The saved file holds the same frames (gdb numbers the file's tracepoint 1).
    t = s.open_trace_file(saved, walk)
    assert [row[2:] for row in t.frames(walk)] == [row[2:] for row in r.frames(walk)]


@pytest.mark.tpagent_only("gdbserver's trace is the one process's")
def test_a_child_per_request_some_execing(e2e):
    """`monitor set trace-follow-fork on`, then 20 children one after the other, each serving
    one request (every fifth then exec's /bin/true): 20 frames from 20 processes, in the order
    the requests were served; `monitor tracepoints` says forks are followed."""
    s = FastTrace(e2e, PROGRAM, "per-request", "4", "5")
    walk = s.walk("$trace_pid", "$trace_thread", "worker", "request")
    r = s.gdb(*TO_MAIN, "monitor set trace-follow-fork on", define(s), "tstart",
              "monitor tracepoints", "break all_served", "continue", "tstop", "tstatus", walk,
              "tfind none", "delete", "continue")
    assert "follow the children" in r.of("monitor set trace-follow-fork on")
    assert "Children forked during the run are followed" in r.of("monitor tracepoints")
    rows = r.frames(walk)
    assert [w for *_x, w, _r in rows] == list(range(20)), rows
    pids = [p for _f, _t, p, _tid, _w, _r in rows]
    assert len(set(pids)) == 20 and s.pid not in pids, pids
    assert all(p == tid for _f, _t, p, tid, _w, _r in rows), rows
    assert r.status().collected == 20, r.status()
    s.server.wait_for(r"^served 20 bad 0$")


@pytest.mark.tpagent_only("gdbserver's trace is the one process's")
def test_a_pass_count_over_the_tree(e2e):
    """passcount 12 over the parent and three workers (35 calls in all): the trace stops by
    the tracepoint with exactly 12 frames, from whichever processes made them, and every
    worker, followed and then let go, still serves right."""
    s = FastTrace(e2e, PROGRAM, "prefork", "3", "5", options=FOLLOW)
    walk = s.walk("$trace_pid", "$trace_thread", "worker", "request")
    r = s.gdb(*TO_MAIN, define(s), "passcount 12 2", *trace_to("all_served"), walk, "tfind none", "delete",
              "continue")
    r.trace_stopped("by tracepoint 2", 12)
    assert len(r.frames(walk)) == 12
    s.server.wait_for(r"^served 3 bad 0$")


@pytest.mark.tpagent_only("gdbserver's trace is the one process's")
def test_memory_a_child_unmapped(e2e):
    """A page listed readable at tstart (the parent's), which the followed child unmaps before
    its second hit: the first frame holds the page's bytes, the second has them unavailable (the
    collector's copy faulted in the child and tpagent recovered it), and the child ends well."""
    s = FastTrace(e2e, PROGRAM, "unmap", options=FOLLOW)
    define = s.define("tvariable $trace_pid",
                      ftrace(s.at("serve_entry"), "collect $trace_pid, request, *page@16"))
    r = s.gdb(*TO_MAIN, "break page_ready", "continue", define, *trace_to("all_served"), "tfind 0",
              "print $trace_pid", "print request",
              "print *page@16", "tfind 1", "print request", "print *page@16", "tfind none", "delete",
              "continue")
    r.trace_stopped("by a tstop command", 2)
    assert int(r.value("print $trace_pid")) != s.pid
    assert r.value("print request") == "0" and r.value("print request", 1) == "1"
    assert r.value("print *page@16") == '"page of the pare"', r.of("print *page@16")
    assert "<unavailable>" in r.of("print *page@16", 1), r.of("print *page@16", 1)
    s.server.wait_for(r"^served 1 bad 0$")


@pytest.mark.tpagent_only("gdbserver's trace is the one process's")
def test_children_run_untraced_by_default(e2e):
    """Without trace-follow-fork, the same prefork run collects the parent's 5 frames only, and
    the workers, their code put back, serve right."""
    s = FastTrace(e2e, PROGRAM, "prefork", "3", "5")
    walk = s.walk("$trace_pid", "$trace_thread", "worker", "request")
    r = s.gdb(*TO_MAIN, define(s), *trace_to("all_served"), walk, "tfind none", "delete", "continue")
    by = rows_by_process(r.frames(walk))
    assert list(by) == [s.pid] and len(by[s.pid]) == 5, by
    s.server.wait_for(r"^served 3 bad 0$")


@pytest.mark.tpagent_only("gdbserver's trace is the one process's")
def test_followed_children_through_disconnected_tracing(e2e):
    """disconnected-tracing on: gdb starts the trace and detaches; the server forks a child a
    millisecond, each serving one request, with no gdb; a second gdb stops the trace: every
    frame is a different child's, their requests exactly 0..N-1 in order, none lost."""
    stop_file = e2e.tmp / "stop"
    s = FastTrace(e2e, PROGRAM, "forever", "0", "0", str(stop_file), options=FOLLOW)
    first = s.gdb(*TO_MAIN, define(s), "set disconnected-tracing on", "tstart", "detach")
    assert_in_order(first.of("detach"), rf"^\[Inferior 1 \(process {s.pid}\) detached\]$")
    s.server.wait_for(r"^rounds 200$")
    walk = s.walk("$trace_pid", "worker")
    r = s.gdb("tstop", "tstatus", walk, "tfind none", f"shell touch {stop_file}", "continue")
    rows = r.frames(walk)
    count = len(rows)
    assert count >= 200, count
    assert [w for *_x, w in rows] == list(range(count)), rows[:5]
    assert len({p for _f, _t, p, _w in rows}) == count
    assert r.status().collected == count, r.status()
    done = int(s.server.wait_for(r"^served (\d+) bad 0$").group(1))
    assert done >= count, (done, count)


@pytest.mark.tpagent_only("gdbserver's trace is the one process's")
def test_a_server_attached_later_in_the_session(e2e):
    """A --multi tpagent, and a server already running (a child a millisecond), attached to
    from gdb (`attach`, vAttach) with `monitor set trace-follow-fork on`: its children's frames
    go into the trace through disconnected tracing, every request exactly once, in order."""
    stop_file = e2e.tmp / "stop"
    out = e2e.tmp / "server.out"
    with open(out, "w") as sink:
        program = subprocess.Popen([str(e2e.program(PROGRAM)), "forever", "0", "0", str(stop_file)],
                                   stdout=sink, stderr=subprocess.STDOUT)
    e2e.reaper.track_popen(program)
    s = Scenario.multi(e2e, PROGRAM)
    first = s.gdb("monitor set trace-follow-fork on", f"attach {program.pid}", define(s),
                  "set disconnected-tracing on", "tstart", "detach")
    assert "follow the children" in first.of("monitor set trace-follow-fork on")
    def rounds() -> int:
        return max([0, *map(int, re.findall(r"^rounds (\d+)$", out.read_text(), re.M))])

    traced_from = rounds()
    wait_until(lambda: rounds() >= traced_from + 200, timeout=60)
    walk = s.walk("$trace_pid", "worker")
    r = s.gdb("tstop", "tstatus", walk, "tfind none", f"shell touch {stop_file}", "detach")
    rows = r.frames(walk)
    count = len(rows)
    assert count >= 150, count  # (the rounds before tstart went untraced)
    first_request = rows[0][3]
    assert [w for *_x, w in rows] == list(range(first_request, first_request + count)), rows[:5]
    assert len({p for _f, _t, p, _w in rows}) == count and program.pid not in {p for _f, _t, p, _w in rows}
    assert r.status().collected == count, r.status()
    assert program.wait(timeout=30) == 0
    done = int(re.search(r"^served (\d+) bad 0$", out.read_text(), re.M).group(1))
    assert done >= first_request + count, (done, count)


# --------------------------------------------------------------------------- a real server


def postgres_bin() -> Path | None:
    """The newest installed PostgreSQL server's bin directory."""
    found = sorted(Path("/usr/lib/postgresql").glob("*/bin/postgres"), key=lambda p: int(p.parent.parent.name))
    return found[-1].parent if found and shutil.which("psql") else None


def as_postgres(*argv: str) -> list[str]:
    """ARGV run as the postgres user when we are root (the server refuses root), else as us."""
    if os.geteuid() != 0:
        return list(argv)
    return ["setpriv", "--reuid=postgres", "--regid=postgres", "--init-groups", "--", *argv]


@pytest.mark.tpagent_only("gdbserver's trace is the one process's")
@pytest.mark.skipif(postgres_bin() is None, reason="no PostgreSQL server here (Debian's postgresql)")
@pytest.mark.skipif(os.geteuid() == 0 and shutil.which("setpriv") is None, reason="no setpriv to run it as postgres")
def test_postgres_backends_collect_their_queries(e2e):
    """A real server: PostgreSQL's postmaster, started in a temporary data directory and
    attached to, with a fast tracepoint in pg_parse_query (called once per simple query; gdb
    13.1 crashes on `strace -m postgresql:query__start` in Debian's stripped binary, and on a
    tracepoint at `-probe-stap`), trace-follow-fork on and disconnected tracing; gdb leaves,
    four psql clients run five queries each at once, each on its own connection, so in a
    backend the postmaster forked during the run; a second gdb stops the trace: 20 frames,
    five from each of four backends, none the postmaster's; each query got its answer; a
    tsave -r file holds them."""
    bin_dir = postgres_bin()
    base = Path(tempfile.mkdtemp(prefix="tpagent-pg-"))
    try:
        if os.geteuid() == 0:
            shutil.chown(base, "postgres", "postgres")
        data, sockets = base / "data", base
        subprocess.run(as_postgres(str(bin_dir / "initdb"), "-D", str(data), "-A", "trust", "-U", "postgres"),
                       check=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, timeout=120)
        port = str(free_port())
        postmaster = e2e.spawn(*as_postgres(str(bin_dir / "postgres"), "-D", str(data), "-k", str(sockets),
                                            "-p", port, "-c", "listen_addresses=", "-c", "max_connections=20"))
        psql = as_postgres("psql", "-X", "-At", "-h", str(sockets), "-p", port, "-U", "postgres", "-d", "postgres")
        assert wait_until(lambda: subprocess.run([*psql, "-c", "select 1"], capture_output=True).returncode == 0,
                          timeout=60), "the server never answered"
        s = Scenario(e2e, "postgres", program=bin_dir / "postgres",
                     server=e2e.serve_attach(postmaster.pid, *FOLLOW))
        first = s.gdb("tvariable $trace_pid", s.define(ftrace("pg_parse_query", "collect $trace_pid")),
                      "set disconnected-tracing on", "tstart", "monitor tracepoints", "detach")
        assert_in_order(first.of("monitor tracepoints"), r"^Fast tracepoint 1 at 0x[0-9a-f]+ jumps to its pad",
                        r"^Children forked during the run are followed: none runs now\.$")
        clients = [subprocess.Popen([*psql, *[a for q in range(5) for a in ("-c", f"select {c * 100 + q} + 1")]],
                                    stdout=subprocess.PIPE, text=True) for c in range(4)]
        answers = [c.communicate(timeout=60)[0].split() for c in clients]
        assert answers == [[str(c * 100 + q + 1) for q in range(5)] for c in range(4)], answers
        walk = s.walk("$trace_pid")
        saved = e2e.tmp / "postgres.tf"
        r = s.gdb("tstop", "tstatus", walk, f"tsave -r {saved}", "detach")
        pids = [row[2] for row in r.frames(walk)]
        counts = {p: pids.count(p) for p in set(pids)}
        assert sorted(counts.values()) == [5, 5, 5, 5] and postmaster.pid not in counts, counts
        assert r.status().collected == 20, r.status()
        t = s.open_trace_file(saved, walk)
        assert [row[2] for row in t.frames(walk)] == pids
        # The server, traced no more, still answers.
        assert subprocess.run([*psql, "-c", "select 41 + 1"], capture_output=True, text=True).stdout.strip() == "42"
    finally:
        subprocess.run(as_postgres(str(bin_dir / "pg_ctl"), "-D", str(base / "data"), "-m", "immediate", "stop"),
                       stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, timeout=60)
        shutil.rmtree(base, ignore_errors=True)


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]
