"""Where the server listens: loopback by default, IPv6, and a port already taken."""

import re
import socket

import pytest

from harness import LISTENING, assert_in_order
from scenario import Scenario

PROGRAM = "basic"


def listening_addresses(port: int) -> set[str]:
    """Local addresses with a socket listening on `port`, from /proc/net/tcp{,6}."""
    found = set()
    for table in ("/proc/net/tcp", "/proc/net/tcp6"):
        with open(table) as f:
            next(f)
            for row in f:
                local, state = row.split()[1], row.split()[3]
                addr, p = local.split(":")
                if state == "0A" and int(p, 16) == port:  # 0A: LISTEN
                    found.add(addr)
    return found


def test_colon_port_listens_on_loopback_only(e2e):
    if e2e.is_gdbserver:
        pytest.skip("gdbserver binds every address")
    server = Scenario(e2e, PROGRAM).server
    assert listening_addresses(server.port) == {"0100007F"}  # 127.0.0.1, nothing else
    server.wait_for(r"accepting connections from this machine only")


def test_ipv6_loopback(e2e):
    program = e2e.program(PROGRAM)
    server = e2e.start_server("[::1]:0", str(program))
    port = int(server.wait_for(LISTENING).group(1))
    r = e2e.gdb(f"target remote [::1]:{port}", "break sum_squares", "continue", program=program)
    assert_in_order(r.of("continue"), r"Breakpoint 1, sum_squares \(n=3\)")


def test_port_in_use(e2e):
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen(1)
        port = taken.getsockname()[1]
        server = e2e.start_server(f"127.0.0.1:{port}", str(e2e.program(PROGRAM)))
        server.wait_for(r"Can't bind address: Address already in use\.")
        assert server.wait_exit() != 0


@pytest.mark.tpagent_only("gdbserver has no --allow")
def test_allow_refuses_other_hosts_and_listens_on(e2e):
    """--allow: a connection from a host not listed is refused at once (said on stderr) and
    the port listens on; one from a listed network gets its session. Over IPv6 too, where
    an IPv4 peer arrives as ::ffff:127.0.0.1 and is matched as 127.0.0.1."""
    program = e2e.program(PROGRAM)
    for listen, host in (("127.0.0.1:0", "127.0.0.1"), ("[::]:0", "127.0.0.1")):
        server = e2e.start_server("--allow", "10.0.0.0/8,fd00::/8", "--allow=127.0.0.2", listen, str(program))
        port = int(server.wait_for(LISTENING).group(1))
        with socket.create_connection((host, port)) as refused:
            refused.settimeout(10)
            assert refused.recv(16) == b""  # closed by tpagent without a word
        server.wait_for(r"^Refused a connection from host (::ffff:)?127\.0\.0\.1, port \d+: not in --allow$")
        server.proc.kill()
        server.wait_exit()
        server = e2e.start_server("--allow", "127.0.0.0/8", listen, str(program))
        port = int(server.wait_for(LISTENING).group(1))
        r = e2e.gdb(f"target remote {host}:{port}", "break sum_squares", "continue", program=program)
        assert_in_order(r.of("continue"), r"Breakpoint 1, sum_squares \(n=3\)")
        server.proc.kill()
        server.wait_exit()


@pytest.mark.tpagent_only("gdbserver has no --allow")
@pytest.mark.parametrize("bad", ["10.0.0.0/33", "host.example", "::1/129", ""])
def test_allow_with_a_bad_entry_stops_tpagent(e2e, bad):
    server = e2e.start_server(f"--allow={bad}", ":0", str(e2e.program(PROGRAM)))
    assert server.wait_exit() != 0
    expected = "--allow needs" if not bad else re.escape(f"--allow {bad}:")
    server.wait_for(expected)
