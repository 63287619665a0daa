"""A packet handler that fails inside tpagent answers E.text, and nothing is lost: the session,
the program and the trace buffer go on as they were. Here the failure is running out of
memory: tpagent runs under an address-space limit (prlimit) and gdb asks for a 1 GiB trace
buffer, which the system refuses to map. (Any other handler's std::bad_alloc is answered
likewise: tests/unit/server.)
"""

import pytest

from harness import pid_alive
from scenario import Scenario, assert_session_works

ADDRESS_SPACE_LIMIT = 256 << 20


@pytest.mark.tpagent_only("gdbserver has no such limit to hit: it answers QTBuffer:size OK")
def test_out_of_memory_in_a_handler_answers_E_text(e2e):
    if e2e.server_bin.sanitized:
        pytest.skip("ASan's shadow memory does not fit under an address-space limit")
    s = Scenario(e2e, "basic", launcher=("prlimit", f"--as={ADDRESS_SPACE_LIMIT}", "--"))
    with s.raw() as rsp:
        assert rsp.request("QTBuffer:size:10000") == "OK"
        reply = rsp.request("QTBuffer:size:40000000")
        assert reply.startswith("E."), reply
        assert reply == "E.trace buffer of 0x40000000 bytes: Cannot allocate memory", reply
        assert_session_works(rsp)
        status = rsp.request("qTStatus")
        assert ";tsize:10000;" in status, status  # the buffer that was there is still there
        assert rsp.request("QTinit") == "OK"
    assert s.server.running()
    assert pid_alive(s.pid)
