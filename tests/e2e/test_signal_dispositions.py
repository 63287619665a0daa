"""The program starts with the signal dispositions a shell would give it, whatever the server
itself ignores. Runs against both stubs."""

from harness import assert_in_order
from scenario import Scenario


def test_program_starts_with_default_signal_dispositions(e2e):
    """What the server ignores (a vanished gdb's SIGPIPE, a full disk's SIGXFSZ, the
    terminal's SIGTTOU/SIGTTIN) the program does not inherit: an ignored SIGPIPE would turn
    its write to a closed pipe into EPIPE instead of its end."""
    s = Scenario(e2e, "dispositions")
    r = s.gdb("continue")
    assert_in_order(r.of("continue"), r"\[Inferior 1 \(process \d+\) exited normally\]")
