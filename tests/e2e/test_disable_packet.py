"""--disable-packet=LIST, gdbserver's option that gdb's testsuite uses to check gdb without
some packets: those get the empty reply, and stop replies leave out what is off (Tthread: no
thread in them; T: plain S replies). gdb still debugs a threaded program through them. Runs
against both stubs."""

import re

import pytest

from harness import assert_in_order
from scenario import Scenario

PROGRAM = "basic"
EXITED = r"\[Inferior 1 \(process \d+\) exited with code 03\]"


def debug_session(e2e, disabled: str):
    s = Scenario(e2e, PROGRAM, options=(f"--disable-packet={disabled}",))
    return s.gdb("set debug remote 1", "break square", "continue", "info threads",
                 "set debug remote 0", "delete", "continue")


def replies_to(text: str) -> dict[str, list[str]]:
    """Each packet gdb sent (its name, up to ':' or ';' or ',') and the replies it got."""
    answers: dict[str, list[str]] = {}
    sent = None
    for line in text.splitlines():
        if m := re.search(r"Sending packet: \$([^#]*)#", line):
            sent = re.split(r"[:;,]", m.group(1))[0]
        elif (m := re.search(r"Packet received: (.*)$", line)) and sent is not None:
            answers.setdefault(sent, []).append(m.group(1).strip())
            sent = None
    return answers


def stop_replies(text: str) -> list[str]:
    return re.findall(r"Packet received: ([ST][0-9a-f]{2}[^\r\n]*)", text)


@pytest.mark.parametrize("disabled", ["threads", "Tthread", "T", "vCont", "qC", "qfThreadInfo"])
def test_debugging_without_the_packets(e2e, disabled):
    r = debug_session(e2e, disabled)
    assert_in_order(r.of("continue"), r"Breakpoint 1, square")
    assert_in_order(r.of("continue", 1), EXITED)
    replies = stop_replies(r.of("continue"))
    assert replies, r.of("continue")
    if disabled in ("threads", "Tthread"):
        assert all(reply.startswith("T") and "thread:" not in reply for reply in replies), replies
    elif disabled == "T":
        assert all(re.fullmatch(r"S[0-9a-f]{2}", reply) for reply in replies), replies
    else:
        assert all("thread:" in reply for reply in replies), replies
    answers = replies_to(r.of("continue") + r.of("info threads"))
    for name, packets in [("vCont", ("vCont?",)), ("qC", ("qC",)),
                          ("qfThreadInfo", ("qfThreadInfo",))]:
        for packet in packets:
            if disabled in (name, "threads"):
                assert set(answers.get(packet, [])) <= {""}, (packet, answers)
            elif packet in answers:
                assert "" not in answers[packet], (packet, answers)


def test_what_it_can_disable(e2e):
    """--disable-packet alone lists what it can turn off, and a name it does not know is a
    usage error."""
    listed = e2e.start_server("--disable-packet")
    assert listed.wait_exit() == 0
    for name in ("vCont", "qC", "qfThreadInfo", "Tthread", "threads", "T"):
        assert re.search(rf"^\s*{name}\s", listed.output, re.M), listed.output
    wrong = e2e.start_server("--disable-packet=nonsense", ":0", str(e2e.program(PROGRAM)))
    assert wrong.wait_exit() != 0
    assert "nonsense" in wrong.output, wrong.output


@pytest.mark.tpagent_only("gdbserver 13's run of this never ends (gdb waits for a stop)")
@pytest.mark.parametrize("disabled", ["threads", "vCont"])
def test_threads_without_vcont(e2e, disabled):
    """A threaded program without vCont: gdb resumes with Hc and c, and every thread runs."""
    s = Scenario(e2e, "threads", options=(f"--disable-packet={disabled}",))
    r = s.gdb("break all_threads_started", "continue", "delete", "continue")
    assert_in_order(r.of("continue"), r"Breakpoint 1, .*all_threads_started")
    assert_in_order(r.of("continue", 1), r"\[Inferior 1 \(process \d+\) exited normally\]")
