"""$_siginfo (qXfer:siginfo:read/write): gdb reads the signal a thread stopped with, as the
kernel filled it in, and changes it before the program gets it. Runs against both stubs."""

from harness import assert_in_order
from scenario import Scenario


def test_siginfo_of_a_fault(e2e):
    s = Scenario(e2e, "crash", "segv")
    r = s.gdb("continue", "print $_siginfo.si_signo", "print $_siginfo.si_code",
              "print $_siginfo._sifields._sigfault.si_addr")
    assert_in_order(r.of("continue"), r"Program received signal SIGSEGV")
    assert r.of("print $_siginfo.si_signo").strip() == "$1 = 11"
    assert r.of("print $_siginfo.si_code").strip() == "$2 = 1"  # SEGV_MAPERR
    assert r.of("print $_siginfo._sifields._sigfault.si_addr").strip() == "$3 = (void *) 0x0"


def test_siginfo_changed_before_delivery(e2e):
    """sigqueue's value 7 is read, replaced by 42, and the handler sees 42 (the exit code)."""
    s = Scenario(e2e, "siginfo")
    value = "$_siginfo._sifields._rt.si_sigval.sival_int"
    r = s.gdb("continue", "print $_siginfo.si_signo", f"print {value}", f"set var {value} = 42",
              f"print {value}", "continue")
    assert_in_order(r.of("continue"), r"Program received signal SIGUSR1")
    assert r.of("print $_siginfo.si_signo").strip() == "$1 = 10"
    assert r.of(f"print {value}").strip() == "$2 = 7"
    assert r.of(f"print {value}", 1).strip() == "$3 = 42"
    assert_in_order(r.of("continue", 1), r"exited with code 052")
