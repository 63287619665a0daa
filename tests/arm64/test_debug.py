"""Debugging on the arm64 board, against each stub: breakpoints, continue, next/step/finish/
until, registers (general, pc, cpsr and a SIMD v register, read and written), memory, set
var, threads, and the hardware debug registers (watch, hbreak, awatch).

basic.c: main fills `watched` (3 writes), calls sum_squares(3) (square() of 1, 2, 3), prints
"sum=14" and exits with `exit_code` (3). traced_threads.c: 4 threads call work(id, round)
5 times each; then main calls all_done() and prints the results (500 * id + 10 each). The
debug-register scenarios are tests/e2e/shared.py's, which tests/e2e runs too.
"""

import re

import pytest

from harness import assert_in_order, hex_value
import shared
from scenario import TO_MAIN
from board import BoardScenario
from shared import AARCH64

V0 = "0x1122334455667788"


def test_session(arm64):
    s = BoardScenario(arm64, "basic")
    line = s.line
    r = s.gdb(
        "break sum_squares", "continue", "bt", "print n", "info registers x0",
        "next", "next", "step", "finish",
        f"until {line('sum_return')}", "print total", "up", "print p", "print p.x * 100 + p.y",
        "info registers pc", "print/x $pc", "info registers sp cpsr",
        "x/4dw squares", "x/2xw square",
        # A SIMD register: written through its 64-bit lanes, read back after the program ran on.
        "info registers v0", f"set var $v0.d.u[0] = {V0}", "set var $v0.d.u[1] = 0x99",
        "stepi", "print/x $v0.d.u", "print $d0.u == $v0.d.u[0]",
        "set var exit_code = 5", "print exit_code", "continue",
    )
    assert_in_order(
        r.of("break sum_squares"), rf"^Breakpoint 1 at 0x[0-9a-f]+: file .*basic\.c, line {line('sum_first')}\.$"
    )
    assert_in_order(r.of("continue"), rf"^Breakpoint 1, sum_squares \(n=3\) at .*basic\.c:{line('sum_first')}$")
    assert_in_order(
        r.of("bt"),
        r"^#0  sum_squares \(n=3\) at .*basic\.c:\d+",
        rf"^#1  0x[0-9a-f]+ in main \(\) at .*basic\.c:{line('main_call')}",
    )
    assert r.value("print n") == "3"
    assert_in_order(r.of("info registers x0"), r"^x0\s+0x3\s+3$")
    # next, next: to the loop head, then into the body; step enters square(1).
    assert re.match(rf"{line('sum_loop')}\s+for \(int i = 1;", r.of("next")), r.of("next")
    assert re.match(rf"{line('sum_call')}\s+total \+= square\(i\);", r.of("next", 1)), r.of("next", 1)
    assert_in_order(r.of("step"), rf"^square \(v=1\) at .*basic\.c:{line('square_body')}$")
    assert_in_order(r.of("finish"), r"in sum_squares \(n=3\)", r"^Value returned is \$\d+ = 1$")
    assert_in_order(r.of(f"until {line('sum_return')}"), rf"sum_squares \(n=3\) at .*basic\.c:{line('sum_return')}")
    assert r.value("print total") == "14"
    assert_in_order(r.of("up"), r"^#1  0x[0-9a-f]+ in main \(\)")
    assert r.value("print p") == "{x = 3, y = 4}"
    assert r.value("print p.x * 100 + p.y") == "304"

    pc = hex_value(r.of("info registers pc"), r"^pc\s+0x([0-9a-f]+)\s+0x[0-9a-f]+ <main\+\d+>$")
    assert hex_value(r.of("print/x $pc"), r"= 0x([0-9a-f]+)$") == pc
    assert_in_order(r.of("info registers sp cpsr"), r"^sp\s+0x[0-9a-f]{8,}\s", r"^cpsr\s+0x[0-9a-f]+\s+\[ .*EL=0")

    assert re.match(r"0x[0-9a-f]+ <squares>:\s+1\s+4\s+9\s+16\s*$", r.of("x/4dw squares")), r.of("x/4dw squares")
    # The code as the file has it: a breakpoint the stub has in square() is hidden.
    assert re.match(r"0x[0-9a-f]+ <square>:\s+0x[0-9a-f]{8}\s+0x[0-9a-f]{8}\s*$", r.of("x/2xw square"))

    assert_in_order(r.of("info registers v0"), r"^v0\s+\{d = \{f = \{")
    assert r.value("print/x $v0.d.u") == f"{{{V0}, 0x99}}"
    assert r.value("print $d0.u == $v0.d.u[0]") == "1"
    assert r.value("print exit_code") == "5"
    assert_in_order(r.of("continue", 1), r"^\[Inferior 1 \(process \d+\) exited with code 05\]$")
    s.server.wait_for(r"^sum=14$")
    s.server.wait_for(r"^Child exited with status 5$")


THREAD_ROW = re.compile(r"^\*?\s+(\d+)\s+Thread \d+\.(\d+) ", re.M)


def test_threads(arm64):
    """A breakpoint in work() stops one of 4 threads with all 5 listed; each thread has its
    own stack; the program, continued, joins them and computes the right results."""
    s = BoardScenario(arm64, "traced_threads")
    r = s.gdb(
        *TO_MAIN, "break work", "continue", "info threads", "print id", "bt", "thread apply all print $sp",
        "delete", "break all_done", "continue", "info threads", "print results", "delete", "continue",
    )
    hit = r'^Thread (\d+) "traced_threads" hit Breakpoint 2, work \(id=(\d), round=0\)'
    stop = re.search(hit, r.of("continue", 1), re.M)
    assert stop, r.of("continue", 1)
    assert stop.group(1) != "1"  # a worker, not main
    rows = THREAD_ROW.findall(r.of("info threads"))
    assert [number for number, _ in rows] == ["1", "2", "3", "4", "5"], r.of("info threads")
    assert len({lwp for _, lwp in rows}) == 5
    assert r.value("print id") == stop.group(2)
    assert_in_order(r.of("bt"), r"^#0  work \(id=\d, round=0\)", r"^#1  0x[0-9a-f]+ in call_work ")
    stacks = re.findall(r"= \(void \*\) (0x[0-9a-f]+)$", r.of("thread apply all print $sp"), re.M)
    assert len(stacks) == 5 and len(set(stacks)) == 5, r.of("thread apply all print $sp")

    assert_in_order(r.of("continue", 2), r"^Thread 1 \"traced_threads\" hit Breakpoint 3, all_done \(\)")
    assert THREAD_ROW.findall(r.of("info threads", 1)) == [rows[0]], r.of("info threads", 1)
    assert r.value("print results") == "{10, 510, 1010, 1510}"
    s.exited(r.of("continue", 3), 0)
    s.server.wait_for(r"^results 10 510 1010 1510$")


def test_thread_pointer(arm64):
    """Each thread's TLS pointer (tpidr_el0, gdb's $tpidr): what gdb needs for __thread
    variables and libthread_db. Main's and the workers' all differ."""
    s = BoardScenario(arm64, "traced_threads")
    r = s.gdb(*TO_MAIN, "print/x $tpidr", "break work", "continue", "thread apply all print/x $tpidr", "kill")
    assert re.fullmatch(r"0x[0-9a-f]{8,}", r.value("print/x $tpidr")), r.of("print/x $tpidr")
    pointers = re.findall(r"^\$\d+ = (0x[0-9a-f]+)$", r.of("thread apply all print/x $tpidr"), re.M)
    assert len(pointers) == 5 and len(set(pointers)) == 5, r.of("thread apply all print/x $tpidr")
    assert r.value("print/x $tpidr") in pointers


# --------------------------------------------------------------------------- debug registers


@pytest.mark.hw_watchpoint
def test_watchpoint(arm64, hw_debug):
    shared.watchpoint_reports_old_and_new_values(BoardScenario(arm64, "basic"), AARCH64)


@pytest.mark.hw_watchpoint
def test_hardware_breakpoint(arm64, hw_debug):
    shared.hardware_breakpoint(BoardScenario(arm64, "basic"))


@pytest.mark.hw_watchpoint
def test_access_watchpoint(arm64, hw_debug):
    shared.access_watchpoint_sees_a_read(BoardScenario(arm64, "basic"), AARCH64)


def test_breakpoint_conditions_and_agent_dprintf(arm64):
    """`set breakpoint condition-evaluation target` on the board: the stub evaluates the
    condition, four threads share 4000 calls and the one where it holds is the one stop; then an
    agent-style dprintf prints from the stub at each of the 200 calls of a second run and the
    program never stops for them."""
    s = BoardScenario(arm64, "cond_breaks", "4000", "4")
    r = s.gdb(*TO_MAIN, "set breakpoint condition-evaluation target", "break hot if n == 3001",
              "continue", "print n", "info breakpoints", "delete", "continue", timeout=300)
    assert "does not support" not in r.transcript, r.transcript
    assert_in_order(r.of("continue", 1), r"Breakpoint 2, hot \(n=3001\)")
    assert r.value("print n") == "3001"
    assert_in_order(r.of("info breakpoints"), r"n == 3001 \(target evals\)", r"already hit 1 time")
    s.exited(r.of("continue", 2), 0)
    s.server.wait_for(rf"^total {4000 * 3999 // 2}$")

    d = BoardScenario(arm64, "cond_breaks", "200")
    d.gdb(*TO_MAIN, "set dprintf-style agent", 'dprintf hot,"hot %ld\\n", n', "continue")
    d.server.wait_for(r"^hot 199$")
    printed = [int(n) for n in re.findall(r"(?m)^hot (\d+)$", d.server.output)]
    assert printed == list(range(200)), printed


def test_agent_dprintf_formatted_in_the_program(arm64):
    """An agent-style dprintf formatted in the program on the board (`monitor breakpoints`
    says so; gdbserver formats it at each stop): four threads share the calls, more than the
    ring of lines holds, and every line comes once, whole."""
    calls = 400 if arm64.is_gdbserver else 20000
    s = BoardScenario(arm64, "cond_breaks", str(calls), "4")
    where = [] if arm64.is_gdbserver else ["monitor breakpoints"]
    r = s.gdb(*TO_MAIN, "set dprintf-style agent", "set breakpoint always-inserted on",
              'dprintf hot,"hot %ld\\n", n', f"break {s.at('end')}", "continue", *where,
              "continue", timeout=300)
    assert_in_order(r.of("continue", 1), r"Breakpoint 3, main")
    if where:
        assert_in_order(r.of("monitor breakpoints"),
                        r"Breakpoint at 0x[0-9a-f]+: its commands run in the program",
                        rf"dprintf lines printed in the program: {calls};.* 0 lost")
    s.exited(r.of("continue", 2), 0)
    s.server.wait_for(rf"^total {calls * (calls - 1) // 2}$")
    printed = sorted(int(n) for n in re.findall(r"(?m)^hot (\d+)$", s.server.output))
    assert printed == list(range(calls)), printed[:10]


def test_breakpoint_condition_in_the_program(arm64):
    """tpagent runs a compiled condition in the program on the board too (`monitor
    breakpoints` says so; gdbserver evaluates it at each stop): four threads share the calls,
    the two where it holds are the stops, the thread goes on from the first, and the program's
    total is intact."""
    # (gdbserver stops at every call: on the emulated board 4000 of them, in four threads,
    # once took over the 300 s limit.)
    calls = 1000 if arm64.is_gdbserver else 20000
    every = calls // 2
    s = BoardScenario(arm64, "cond_breaks", str(calls), "4")
    where = [] if arm64.is_gdbserver else ["monitor breakpoints"]
    # `finish`, not `next`: a `next` over the contended lock hung gdb about 1 run in 8 with
    # gdbserver. The stepping thread waits in the futex `svc`; when the others are stopped,
    # the kernel rewinds its pc to the `svc`, gdb puts a breakpoint there before resuming, a
    # second waiter hits it, and gdb steps that thread over it alone: into a futex wait whose
    # lock holder gdb keeps stopped. (`advance` stops in whichever thread gets there first.)
    r = s.gdb(*TO_MAIN, "set breakpoint condition-evaluation target",
              "set breakpoint always-inserted on", f"break hot if n % {every} == 5", "continue",
              "print n", *where, "finish", "continue", "print n", "info breakpoints", "delete",
              "continue", timeout=300)
    assert_in_order(r.of("continue", 1), r"Breakpoint 2, hot \(n=5\)")
    # (n = 5 is the call of the thread that runs share(1).)
    assert_in_order(r.of("finish"), r"share \(arg=0x1\) at .*cond_breaks\.c")
    assert_in_order(r.of("continue", 2), rf"Breakpoint 2, hot \(n={every + 5}\)")
    assert_in_order(r.of("info breakpoints"), rf"n % {every} == 5 \(target evals\)",
                    r"already hit 2 times")
    if not arm64.is_gdbserver:
        assert_in_order(r.of("monitor breakpoints"),
                        r"Breakpoint at 0x[0-9a-f]+: its condition runs in the program")
    s.exited(r.of("continue", 3), 0)
    s.server.wait_for(rf"^total {calls * (calls - 1) // 2}$")


def test_thread_local_variables(arm64):
    """`__thread` variables and errno, in each of two threads (qGetTLSAddr: tpidr_el0 and
    glibc's DTV)."""
    s = BoardScenario(arm64, "tls_vars")
    # (The board's libc has no debug info: errno is a minimal symbol, given its type.)
    errno = "print (int) errno"
    r = s.gdb(*TO_MAIN, "break stop_here", "continue", "print counter", errno, "thread 2",
              "print counter", errno, "kill")
    assert "Cannot find thread-local" not in r.transcript, r.transcript
    assert (r.value("print counter"), r.value(errno)) == ("42", "11")
    assert (r.value("print counter", 1), r.value(errno, 1)) == ("7", "33")


def test_own_trap_under_a_conditional_breakpoint(arm64):
    shared.own_trap_under_a_conditional_breakpoint(BoardScenario(arm64, "own_traps", "3"))


def test_call_returns_though_sigsegv_is_passed(arm64):
    shared.call_returns_though_sigsegv_is_passed(BoardScenario(arm64, "own_traps", "0"))
