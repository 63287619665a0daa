"""Malformed tracepoint definitions from a raw socket: the server answers with an error
(a reply starting with 'E') and its tracepoint table keeps what was good.

Each test defines tracepoint 1 at the program's entry point, sends one bad QTDP, and
then lists the table with qTfP/qTsP. No tracepoint is started.
"""

import pytest

from scenario import Scenario, tracepoint_rows, tracepoint_table


@pytest.fixture
def client(e2e):
    """A raw connection to a server holding traced.c stopped at its entry point, with
    tracepoint 1 defined there (enabled, no step count, no pass count, no actions)."""
    with Scenario(e2e, "traced").raw() as rsp:
        assert rsp.features.get("ConditionalTracepoints") == "+", rsp.features
        rsp.entry = rsp.pc()
        assert rsp.request("QTinit") == "OK"
        assert rsp.request(f"QTDP:1:{rsp.entry:016x}:E:0:0") == "OK"
        yield rsp


def assert_only_the_good_one(rsp) -> None:
    assert tracepoint_rows(rsp) == [(1, rsp.entry, "E:0:0")], tracepoint_table(rsp)
    assert rsp.request("qTStatus").startswith("T0;")  # the session goes on


def test_actions_without_a_definition_are_refused(client):
    reply = client.request(f"QTDP:-7:{client.entry:016x}:R01")  # tracepoint 7 was never announced
    assert reply.startswith("E"), reply
    assert_only_the_good_one(client)


def test_actions_for_another_tracepoint_are_refused(client):
    """A continuation must name the tracepoint that announced it (trailing '-').
    (Whether the announced tracepoint 2 is kept without actions is the server's choice.)"""
    b = client.entry + 1
    assert client.request(f"QTDP:2:{b:016x}:E:0:0-") == "OK"
    reply = client.request(f"QTDP:-3:{b:016x}:R01")
    assert reply.startswith("E"), reply
    rows = tracepoint_rows(client)
    assert (1, client.entry, "E:0:0") in rows and all(n in (1, 2) for n, _, _ in rows), tracepoint_table(client)


@pytest.mark.tpagent_only("gdbserver 13 refuses any redefinition")
def test_redefinition(client):
    """gdb sends every location again when a shared library loads: the same definition is
    taken as it is; a different one replaces it, during a run too (a fast tracepoint's is
    refused then: test_conformance.py)."""
    a = client.entry
    assert client.request(f"QTDP:1:{a:016x}:E:0:0") == "OK"
    assert_only_the_good_one(client)
    assert client.request("QTStart") == "OK"
    assert client.request(f"QTDP:1:{a:016x}:E:0:5") == "OK"  # now with a pass count
    assert client.request("QTStop") == "OK"
    assert tracepoint_rows(client) == [(1, a, "E:0:5")], tracepoint_table(client)


@pytest.mark.tpagent_only("gdbserver 13 takes most of these, or keeps the tracepoint it refused")
@pytest.mark.parametrize(
    "template",
    [
        "QTDP:2:zz{b:014x}:E:0:0",  # address not hex
        "QTDP:2:{b:016x}:Q:0:0",  # neither E nor D
        "QTDP:2",  # no address, flags, step or pass count
        "QTDP:",  # nothing at all
        "QTDP:2:{b:016x}:E:0:0:X02,zzzz",  # condition not hex
        "QTDP:2:{b:016x}:E:0:0:X03,2627",  # condition shorter than its length
        "QTDP:2:{b:016x}:E:0:0:X02,ff27",  # condition with no such opcode
    ],
    ids=["address", "enable-flag", "truncated", "empty", "cond-hex", "cond-short", "cond-opcode"],
)
def test_bad_header_creates_nothing(client, template):
    reply = client.request(template.format(b=client.entry + 1))
    assert reply.startswith("E"), reply
    assert_only_the_good_one(client)


@pytest.mark.tpagent_only("gdbserver 13 takes these and leaves the error, if any, to QTStart")
@pytest.mark.parametrize(
    "action",
    ["Xzz,00", "X02,ff27", "X03,2627", "Q00", "R"],
    ids=["bytecode-hex", "bytecode-opcode", "bytecode-short", "letter", "mask-missing"],
)
def test_bad_action_is_refused(client, action):
    b = client.entry + 1
    assert client.request(f"QTDP:2:{b:016x}:E:0:0-") == "OK"
    reply = client.request(f"QTDP:-2:{b:016x}:{action}")
    assert reply.startswith("E"), reply
    # Tracepoint 1 is untouched, and nothing of the refused action is kept.
    assert (1, client.entry, "E:0:0") in tracepoint_rows(client)
    assert not any(piece.endswith(":" + action) for piece in tracepoint_table(client)), tracepoint_table(client)
