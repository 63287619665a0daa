"""Faults: connections that go wrong while a gdb traces.

- A second gdb runs `target remote` to the port while the first is connected and tracing. It
  must fail promptly, saying why, rather than hang in timeouts; the first session must not
  notice: its commands work, the trace goes on with every frame; and once the first gdb leaves,
  the next one finds the program and the trace as the first left them.
- The first gdb's host vanishes (a pulled cable): no FIN or RST ever comes. With disconnected
  tracing on, the server must find the peer dead within a bounded time (TCP keepalive and
  TCP_USER_TIMEOUT: tpagent probes after 10 s of silence, 3 probes 5 s apart), take it as a
  disconnect (the trace goes on) and accept a new gdb, which finds the trace and its frames.
  The cable is pulled for real: the cut-off gdb runs in a network namespace of its own joined
  to tpagent's by a veth pair, whose link is then set down, and gdb is SIGKILLed (its FIN goes
  nowhere). Freezing a TCP proxy with SIGSTOP would not do: the proxy's kernel still ACKs data
  and keepalive probes, so to TCP the peer is alive; only a link that drops packets is dead.

tpagent answers the second gdb's first packet with `E.tpagent is serving another gdb (host H,
port P)` and closes the connection. gdbserver 13 does not turn it away: the listening socket's
backlog takes its connection and nobody answers it, so gdb goes through its own timeouts
("Ignoring packet error, continuing...", "Remote replied unexpectedly to 'vMustReplyEmpty':
timeout") for about 28 s before it gives up, and its stale packets are read when the first
session ends; the first test is therefore tpagent's too. gdbserver's keepalive
has the system's timing (tcp_keepalive_time, 2 hours by default), and gdbserver leaves the program
stopped when its gdb is gone: the second test is tpagent's.

programs/faults_pace.c calls pace_hit(n) for n = 0, 1, 2, ... every PACE_US; the tracepoint in
pace_hit collects pace_last (= n), so trace frame k holds k, and pace_end(hits) ends it.
"""

import os
import re
import subprocess
import time
from pathlib import Path

import pytest

from harness import DISCONNECTED, INFERIOR_CREATED, LISTENING, Gdb, assert_in_order, gdb_argv, wait_until
from scenario import TO_MAIN, Scenario, record_reliability, trace

PROGRAM = "faults_pace"
PACE_US = 10000
# A second gdb must have its answer within this (gdb 13's own timeouts, 2 s a try, are what
# it gets from a server that never answers: about 28 s of "Ignoring packet error").
SECOND_GDB_SECONDS = 10
# A clear refusal, as gdb words it: the port refusing the connection, or the server saying
# why (a failure reply) and closing it.
REFUSED = r"^warning: Remote failure reply: E\.tpagent is serving another gdb \(host 127\.0\.0\.1, port \d+\)$"
# tpagent's keepalive: 10 s of silence, then 3 probes 5 s apart (25 s), with slack for a busy
# machine.
DEAD_PEER_SECONDS = 10 + 3 * 5 + 10
GDB_SIDE, TPAGENT_SIDE = "10.213.7.2", "10.213.7.1"


def pacing(e2e) -> tuple[Scenario, Path]:
    """faults_pace hitting pace_hit every PACE_US until its stop file exists; the scenario and
    the file."""
    stop = e2e.tmp / "stop"
    return Scenario(e2e, PROGRAM, str(stop), str(PACE_US)), stop


def trace_pace(s: Scenario) -> list[str]:
    """gdb to main, tracepoint 2 in pace_hit collecting pace_last, disconnected tracing, tstart."""
    return [*TO_MAIN, s.define(trace("pace_hit", "collect pace_last")), "set disconnected-tracing on", "tstart"]


@pytest.mark.tpagent_only("gdbserver leaves a second gdb in the backlog, to time out after about 28 s")
def test_a_second_gdb_is_turned_away_and_the_first_goes_on(e2e):
    """The first gdb traces and waits in `continue` for pace_end; a second one tries the port
    meanwhile and must be told no within SECOND_GDB_SECONDS. The first then stops at pace_end
    with every hit a frame, tstops and disconnects; a third finds all of it."""
    s, stop = pacing(e2e)
    marker = e2e.tmp / "first-gdb-continues"
    walk = s.walk("pace_last")
    first = s.gdb_start(
        *trace_pace(s), "break pace_end", f"shell touch {marker}", "continue",
        "tstatus", "print hits", "tstop", "tstatus", walk, "disconnect",
    )
    e2e.wait_for_file(marker)
    time.sleep(0.5)  # the program runs, traced

    started = time.monotonic()
    second = s.wait(s.gdb_start("info registers rip"))
    took = time.monotonic() - started
    print(f"the second gdb took {took:.1f} s")
    assert not re.search(r"Ignoring packet error|Remote replied unexpectedly", second.output), second.transcript
    assert re.search(REFUSED, second.of(s.connect), re.M), second.of(s.connect)
    s.server.wait_for(r"^Refused a connection from host 127\.0\.0\.1, port \d+: tpagent is serving another gdb")
    assert took < SECOND_GDB_SECONDS, f"the second gdb took {took:.1f} s to give up"
    assert_in_order(second.of("info registers rip"), r"^The program has no registers now\.$")

    # The first gdb was in `continue` all along: the program reaches pace_end once told to.
    stop.touch()
    r = s.wait(first)
    hits = int(r.value("print hits"))
    r.stopped_at(1, rf"^Breakpoint 3, pace_end \(hits={hits}\)")
    running = r.status()
    assert (running.running, running.on_disconnect, running.collected) == (True, "continue", hits), running
    assert r.trace_stopped("by a tstop command", hits, nth=1)
    assert r.frames(walk) == [(k, 2, k) for k in range(hits)]
    s.server.wait_for(DISCONNECTED)

    # The next gdb finds the program at pace_end and the trace whole: whatever the second gdb
    # left queued at the port did not get in its way.
    third = s.gdb("bt 1", "tstatus", "tfind 0", "print pace_last", "tfind none", "continue")
    assert_in_order(third.of("bt 1"), rf"^#0  pace_end \(hits={hits}\)")
    assert third.trace_stopped("by a tstop command", hits)
    assert third.value("print pace_last") == "0"
    s.exits_as_natively(third.of("continue"))
    s.server.wait_for(rf"^hits={hits}$")
    record_reliability("A second gdb connects during a session (turned away at once)", 1, hits)


# --------------------------------------------------------------------------- the pulled cable

NETNS_LAUNCHER = ("unshare", "--net", "sh", "-c", 'ip link set lo up && exec "$@"', "in-its-own-netns")


def in_netns(pid: int, *argv: str) -> list[str]:
    """ARGV run in the network namespace of process PID."""
    return ["nsenter", f"--net=/proc/{pid}/ns/net", *argv]


def run_in_netns(pid: int, *argv: str) -> None:
    out = subprocess.run(in_netns(pid, *argv), capture_output=True, text=True, timeout=20)
    assert out.returncode == 0, f"{' '.join(argv)}: {out.stderr}"


def own_netns(pid: int) -> bool:
    """Process PID has a network namespace other than ours (its unshare has happened)."""
    try:
        return os.readlink(f"/proc/{pid}/ns/net") != os.readlink("/proc/self/ns/net")
    except FileNotFoundError:
        return False


def netns_or_skip() -> None:
    """Network namespaces and veth pairs work here (root, ip, unshare, nsenter), or the test
    is skipped saying what is missing."""
    for tool in ("ip", "unshare", "nsenter"):
        if subprocess.run(["sh", "-c", f"command -v {tool}"], capture_output=True).returncode != 0:
            pytest.skip(f"no {tool} here to pull a cable with")
    probe = "ip link add tp-probe-a type veth peer name tp-probe-b"
    out = subprocess.run(["unshare", "--net", "sh", "-c", probe], capture_output=True, text=True, timeout=20)
    if out.returncode != 0:
        pytest.skip(f"no network namespace with a veth pair here: {out.stderr.strip()}")


def gdb_in_netns(s: Scenario, pid: int, *commands: str) -> Gdb:
    """gdb on the program in the network namespace of process PID, running COMMANDS."""
    argv = in_netns(pid, *gdb_argv(list(commands), s.program))
    return Gdb(list(commands), s.program, s.e2e.reaper, argv=argv)


@pytest.mark.tpagent_only("gdbserver's keepalive has the system's timing (2 h); gdb's death leaves the program stopped")
@pytest.mark.timeout(120)
def test_a_vanished_gdb_is_a_disconnect_and_the_trace_goes_on(e2e):
    """gdb starts a disconnected trace from its own network namespace and stays at the prompt
    (the program stopped for it); its link goes down and it dies. tpagent must take that for a
    disconnect within DEAD_PEER_SECONDS, let the program run on traced, and a new gdb must find
    the trace running and every hit a frame."""
    netns_or_skip()
    stop = e2e.tmp / "stop"
    program = e2e.program(PROGRAM)
    # tpagent in a network namespace of its own, listening on every address there.
    server = e2e.start_server("0.0.0.0:0", str(program), str(stop), str(PACE_US), launcher=NETNS_LAUNCHER)
    server.wait_for(INFERIOR_CREATED)
    server.port = int(server.wait_for(LISTENING).group(1))
    s = Scenario(e2e, PROGRAM, str(stop), str(PACE_US), server=server)
    # gdb's host: another namespace, a veth pair its only link to tpagent's.
    host = e2e.spawn("unshare", "--net", "sleep", "300")
    assert wait_until(lambda: own_netns(host.pid) and own_netns(server.pid)), "no network namespaces"
    subprocess.run(["ip", "link", "add", "tpagent-side", "netns", str(server.pid), "type", "veth",
                    "peer", "name", "gdb-side", "netns", str(host.pid)], check=True, timeout=20)
    for pid, device, address in ((server.pid, "tpagent-side", TPAGENT_SIDE), (host.pid, "gdb-side", GDB_SIDE)):
        run_in_netns(pid, "ip", "addr", "add", f"{address}/24", "dev", device)
        run_in_netns(pid, "ip", "link", "set", device, "up")

    marker = e2e.tmp / "gdb-is-tracing"
    define = s.define(trace("pace_hit", "collect pace_last"))
    cut_off = gdb_in_netns(
        s, host.pid, f"target remote {TPAGENT_SIDE}:{server.port}", *TO_MAIN, define,
        "set disconnected-tracing on", "tstart", f"shell touch {marker}", "python import time; time.sleep(200)",
    )
    e2e.wait_for_file(marker)
    assert f"Remote debugging from host {GDB_SIDE}," in server.output
    # The cable is pulled, then gdb dies: its FIN and any RST go nowhere.
    run_in_netns(host.pid, "ip", "link", "set", "gdb-side", "down")
    pulled = time.monotonic()
    cut_off.kill()
    s.wait(cut_off)
    server.wait_for(DISCONNECTED, timeout=DEAD_PEER_SECONDS + 30)
    took = time.monotonic() - pulled
    print(f"tpagent found the peer gone {took:.1f} s after the cable was pulled")
    assert took < DEAD_PEER_SECONDS, f"the dead peer was found after {took:.1f} s"

    # A new gdb (on tpagent's own host) finds the trace running, frames collected since the
    # disconnect, and every one of them there.
    time.sleep(0.5)
    walk = s.walk("pace_last")
    r = s.wait(gdb_in_netns(
        s, server.pid, s.connect, "tstatus", "break pace_end", f"shell touch {stop}", "continue", "tstop",
        "tstatus", "print hits", walk, "tfind none", "delete", "continue",
    ))
    assert_in_order(r.of(s.connect), r"^Trace is already running on the target\.$")
    running = r.status()
    assert (running.running, running.on_disconnect) == (True, "continue"), running
    assert running.collected > 0, running
    hits = int(r.value("print hits"))
    assert r.trace_stopped("by a tstop command", hits, nth=1)
    assert hits >= running.collected  # one more hit if it was stopped just before one
    r.stopped_at(0, rf"^Breakpoint 2, pace_end \(hits={hits}\)")
    assert r.frames(walk) == [(k, 2, k) for k in range(hits)]
    s.exits_as_natively(r.of("continue", 1))
    server.wait_for(rf"^hits={hits}$")
    record_reliability("gdb's connection vanishes without FIN (keepalive ends it, the trace goes on)", 1, hits)
