"""Bad input on the wire, from a raw socket: the server answers as the protocol says and
the session goes on. After each bad packet a normal request must still work.

tpagent's documented answers: unknown packet -> empty reply; malformed arguments -> E01;
longer than PacketSize -> E05; bad checksum -> '-'.
"""

import pytest

from rsp import RspClient, frame
from scenario import STOP_REPLY, Scenario, assert_session_works


@pytest.fixture
def client(e2e):
    """A raw connection to a server holding basic.c stopped at its entry point, after
    qSupported and '?' (gdb asks this first, too)."""
    with Scenario(e2e, "basic").raw() as rsp:
        yield rsp


def request_with_retry(rsp: RspClient, payload: str, tries: int = 3) -> str:
    """Like gdb: resend on '-' or on silence; a server resynchronises on the next '$'."""
    for _ in range(tries):
        rsp.send_raw(frame(payload))
        if rsp.silent(1.0):
            continue
        ack = rsp.read_ack() if rsp.ack_mode else b"+"
        if ack == b"+":
            return rsp.read_packet()
    raise AssertionError(f"no answer to {payload!r} after {tries} tries")


def test_handshake_advertises_packet_size(client):
    assert int(client.features["PacketSize"], 16) >= 1024
    assert_session_works(client)


@pytest.mark.parametrize("packet", ["vMustReplyEmpty", "qNoSuchQuery", "QNoSuchSetting:1", "vNoSuchVerb;1"])
def test_unknown_packet_gets_empty_reply(client, packet):
    client.send_raw(frame(packet))
    assert client.read_ack() == b"+"
    # The exact bytes of an empty reply.
    assert client.read_byte() + client.read_byte() + client.read_byte() + client.read_byte() == b"$#00"
    client.send_raw(b"+")
    assert_session_works(client)


@pytest.mark.parametrize("payload", ["?", "m0,1"])
def test_bad_checksum_is_nacked(client, payload):
    good = frame(payload)
    bad = good[:-2] + (b"00" if good[-2:] != b"00" else b"01")
    client.send_raw(bad)
    assert client.read_ack() == b"-"
    assert client.silent(), "server answered a packet it rejected"
    # gdb resends the same packet, now intact.
    reply = client.request(payload)
    assert reply.startswith("E") if payload.startswith("m0") else STOP_REPLY.match(reply)
    assert_session_works(client)


@pytest.mark.parametrize(
    "template",
    [
        "mZZZZ,4",  # address not hex
        "m{pc:x},zz",  # length not hex
        "m",  # no arguments
        "m{pc:x}",  # no length
        "M{pc:x},2:zzzz",  # data not hex
    ],
)
def test_malformed_arguments_get_E01(client, template):
    pc = client.pc()
    before = client.request(f"m{pc:x},4")
    assert client.request(template.format(pc=pc)) == "E01"
    assert client.request(f"m{pc:x},4") == before  # and nothing was written
    assert_session_works(client)


@pytest.mark.tpagent_only("gdbserver 13 writes a short M packet's data")
def test_short_write_data_gets_E01(client):
    """M with fewer data bytes than its length (gdbserver 13 writes what it got)."""
    pc = client.pc()
    before = client.request(f"m{pc:x},4")
    assert client.request(f"M{pc:x},4:ab") == "E01"
    assert client.request(f"m{pc:x},4") == before
    assert_session_works(client)


@pytest.mark.parametrize("truncated", [b"$m0,", b"$?#3"], ids=["no-checksum", "half-checksum"])
def test_truncated_packet_then_recovery(client, truncated):
    client.send_raw(truncated)
    assert client.silent(0.5), "server answered an unfinished packet"
    # The next packet ends the broken one; the server NAKs the mess or waits for more,
    # and a resend (as gdb does on '-' or timeout) gets through.
    assert STOP_REPLY.match(request_with_retry(client, "?"))
    assert_session_works(client)


@pytest.mark.tpagent_only("gdbserver 13 answers E01 or drops the connection")
def test_packet_longer_than_packet_size_gets_E05(client):
    size = int(client.features["PacketSize"], 16)
    assert client.request("qNoSuchQuery:" + "a" * size) == "E05"
    assert_session_works(client)
    assert client.request("m0," + "0" * size) == "E05"
    assert_session_works(client)


def test_no_ack_mode(client):
    client.no_ack_mode()
    # From now on neither side sends '+': read_packet rejects anything before '$'.
    client.send_raw(frame("qNoSuchQuery"))
    assert client.read_packet() == ""
    assert client.request("m0,4").startswith("E")  # unreadable address
    assert_session_works(client)
    assert client.silent(), "stray bytes in no-ack mode"


@pytest.mark.tpagent_only("gdbserver 13 falls back to ack mode after a malformed packet")
def test_no_ack_mode_survives_malformed_packets(client):
    """gdbserver 13 falls back to ack mode after a malformed packet; tpagent stays."""
    client.no_ack_mode()
    pc = client.pc()
    assert client.request(f"m{pc:x},zz") == "E01"
    assert client.request("mZZZZ,4") == "E01"
    assert_session_works(client)
    assert client.silent(), "stray bytes in no-ack mode"


@pytest.mark.parametrize(
    "packet",
    [
        "QCatchSyscalls:1;zz",  # a system call number not hex
        "QCatchSyscalls:2",  # neither 1 nor 0
        "vKill;zz",  # pid not hex
        "vKill;7fffffff",  # no such process
        "D;7fffffff",  # no such process, nor a forked child
        "QNonStop:2",  # neither 1 nor 0
        "QThreadEvents:2",  # neither 1 nor 0
    ],
)
def test_bad_event_and_process_requests_get_E(client, packet):
    """Refused with an E reply; the session, and what gdb asked before, stay as they were."""
    assert client.request("QCatchSyscalls:1;3") == "OK"
    assert client.request(packet).startswith("E"), packet
    assert_session_works(client)


def test_an_unknown_osdata_type_is_an_empty_document(client):
    """gdb names an empty document a wrong osdata type to its user; an error would say less."""
    assert client.request("qXfer:osdata:read:nosuchtable:0,100") == "l"
    assert_session_works(client)


@pytest.mark.tpagent_only("gdbserver 13 answers osdata and siginfo requests differently; checked on ours")
@pytest.mark.parametrize(
    "packet",
    ["qXfer:osdata:read:processes:zz,100", "qXfer:siginfo:write::zz:ab"],
)
def test_bad_osdata_and_siginfo_requests_get_E(client, packet):
    assert client.request(packet).startswith("E"), packet
    assert_session_works(client)
