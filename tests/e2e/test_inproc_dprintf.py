"""Agent-style `dprintf` (`set dprintf-style agent`) formatted inside the program: tpagent
carries the dprintf's breakpoint into the program as it carries a conditional breakpoint (a jump
to a pad), and the in-process agent formats each line there, with no C library, into a ring in
the memory it shares with tpagent, which prints the lines where it prints the dprintfs it runs
itself (its standard output). The program stops only when the ring is full, for tpagent to
empty it: every line is printed, in order. Run against both stubs (gdbserver stops the
program at each line) except where said."""

import re

import pytest

from harness import assert_in_order
from scenario import TO_MAIN, Scenario

PROGRAM = "cond_breaks"
AGENT = "set dprintf-style agent"
TARGET_EVAL = "set breakpoint condition-evaluation target"
EXITED = r"\[Inferior 1 \(process \d+\) exited normally\]"
IN_PROGRAM = r"Breakpoint at 0x[0-9a-f]+: its {} run in the program"
STATS = (r"dprintf lines printed in the program: (\d+); the program stopped (\d+) time\(s\) for "
         r"tpagent to make room; (\d+) lost")


def total(calls: int) -> str:
    return rf"^total {calls * (calls - 1) // 2}$"


def printed(s) -> list[int]:
    return [int(n) for n in re.findall(r"(?m)^hot (\d+)$", s.server.output)]


def test_every_line_in_order(e2e):
    """20000 calls in a tight loop (2000 for gdbserver, which stops at each): every line, in
    order, though the ring holds 2048; `monitor breakpoints` says the dprintf ran in the program,
    how many lines it printed there and how often the program waited for room, none lost."""
    calls = 2000 if e2e.is_gdbserver else 20000
    s = Scenario(e2e, PROGRAM, str(calls))
    where = [] if e2e.is_gdbserver else ["monitor breakpoints"]
    r = s.gdb(*TO_MAIN, AGENT, "set breakpoint always-inserted on", 'dprintf hot,"hot %ld\\n", n',
              f"break {s.at('end')}", "continue", *where, "continue", timeout=120)
    assert_in_order(r.of("continue", 1), r"Breakpoint 3, main")
    assert_in_order(r.of("continue", 2), EXITED)
    s.server.wait_for(total(calls))
    assert printed(s) == list(range(calls)), printed(s)[:10]
    if not e2e.is_gdbserver:
        out = r.of("monitor breakpoints")
        assert_in_order(out, IN_PROGRAM.format("commands"))
        stats = re.search(STATS, out)
        assert stats, out
        lines, waits, lost = map(int, stats.groups())
        assert lines == calls and lost == 0, out
        # At least once per ring's worth that tpagent did not empty in time; at most once a
        # line.
        assert waits < calls, out


@pytest.mark.tpagent_only("gdbserver runs a dprintf's commands whether or not its condition holds")
def test_with_a_condition(e2e):
    """A conditional dprintf: condition and printf both run in the program, and only the calls
    where the condition holds print."""
    s = Scenario(e2e, PROGRAM, "50000")
    r = s.gdb(*TO_MAIN, TARGET_EVAL, AGENT, "set breakpoint always-inserted on",
              'dprintf hot,"hot %ld\\n", n', "condition 2 n % 10000 == 3", f"break {s.at('end')}",
              "continue", "monitor breakpoints", "continue", timeout=120)
    assert_in_order(r.of("monitor breakpoints"), IN_PROGRAM.format("condition and commands"))
    assert_in_order(r.of("continue", 2), EXITED)
    s.server.wait_for(total(50000))
    assert printed(s) == [3, 10003, 20003, 30003, 40003], printed(s)


def test_four_threads(e2e):
    """Four threads calling the dprintf's function at once: each line whole, none lost, none
    twice."""
    calls = 4000 if e2e.is_gdbserver else 40000
    s = Scenario(e2e, PROGRAM, str(calls), "4")
    r = s.gdb(*TO_MAIN, AGENT, 'dprintf hot,"hot %ld\\n", n', "continue", timeout=120)
    assert_in_order(r.of("continue", 1), EXITED)
    s.server.wait_for(total(calls))
    assert sorted(printed(s)) == list(range(calls))
    # Nothing else between the lines (a torn line would leave a fragment).
    lines = [l for l in s.server.output.splitlines() if l.startswith("hot")]
    assert all(re.fullmatch(r"hot \d+", l) for l in lines), [l for l in lines if not
                                                            re.fullmatch(r"hot \d+", l)][:5]


def test_formats_as_the_c_library(e2e):
    """Flags, widths, precisions, strings, a character and a pointer: the line the agent
    formats is the one gdbserver (the C library's snprintf) formats. (gdbserver's agent fails
    on %p: E01 for each hit.)"""
    s = Scenario(e2e, PROGRAM, "3")
    name = "*(char **) &program_invocation_short_name"  # glibc's: "cond_breaks"
    pointer = ("", "") if e2e.is_gdbserver else ("|%p", ", (void *) n")
    fmt = (rf'"[%-6ld|%+d|%#x|%08.3lx|%5.2s|%-14s|%c{pointer[0]}|%%]\n", n, (int) -n, '
           f"(unsigned) n * 255, n, {name}, {name}, 65 + (int) n{pointer[1]}")
    r = s.gdb(*TO_MAIN, AGENT, f"dprintf hot,{fmt}", "continue")
    assert_in_order(r.of("continue", 1), EXITED)
    s.server.wait_for(total(3))
    lines = re.findall(r"(?m)^\[.*\]$", s.server.output)
    want = ["[0     |+0|0|     000|   co|cond_breaks   |A|(nil)|%]",
            "[1     |-1|0xff|     001|   co|cond_breaks   |B|0x1|%]",
            "[2     |-2|0x1fe|     002|   co|cond_breaks   |C|0x2|%]"]
    if e2e.is_gdbserver:
        want = [re.sub(r"\|(\(nil\)|0x\d)\|", "|", w) for w in want]
    assert lines == want, lines


@pytest.mark.tpagent_only("tpagent's own warning")
def test_a_command_that_fails(e2e):
    """A dprintf whose %s argument cannot be read: the line is left out, tpagent warns with the
    breakpoint's address, and the program is not harmed."""
    s = Scenario(e2e, PROGRAM, "3")
    r = s.gdb(*TO_MAIN, AGENT, 'dprintf hot,"hot %ld %s\\n", n, (char *) 16 + n', "continue")
    assert_in_order(r.of("continue", 1), EXITED)
    s.server.wait_for(total(3))
    assert not re.search(r"(?m)^hot ", s.server.output), s.server.output[-2000:]
    s.server.wait_for(r"command of the breakpoint at 0x[0-9a-f]+, in the program: .*memory")
