"""Trap and fast tracepoints on arm64's PC-relative instructions, against each stub: B, B.cond
(taken and not), BL, ADRP, ADR and LDR (literal) under a tracepoint must do exactly what they
do untraced (tpagent runs the displaced instruction from a pad, rebuilt for the pad's address,
after a trap or after its fast pad collected; gdbserver steps it in place, and has no working
fast tracepoints here). test_every_class covers the rest (CBZ/CBNZ, TBZ/TBNZ, SIMD&FP and
LDRSW literals, PRFM) with a64_pc_relative.c's hand-written instructions. traced.c's main and record_hit (gcc -O0) have the branches and
ADRP; built -mcmodel=tiny (traced_tiny) they reach globals with ADR and the GOT with LDR
(literal). The instructions are found in gdb's disassembly, so the test follows the
compiler. (gcc -O0 emits no CBZ/CBNZ, TBZ/TBNZ for these programs.)

Checked: each tracepoint's hits (frames), each frame's pc, the return address BL leaves in
x30 (the original call site's, not the pad's), the address ADRP/ADR/LDR leave in their
register, and the program's output and exit status.
"""

import re
from collections import Counter

import pytest

import shared
from scenario import TO_MAIN, ftrace, trace, trace_to, tracepoint_address
from board import BoardFastTrace, BoardScenario
from shared import AARCH64

PROGRAM = "traced"
# Each test with trap tracepoints, and with fast ones (tpagent's: a B to a pad that runs the
# rebuilt instruction after collecting; Debian's arm64 in-process agent crashes programs).
KINDS = pytest.mark.parametrize(
    "kind",
    ["trace", pytest.param("ftrace", marks=pytest.mark.tpagent_only("Debian's arm64 in-process agent crashes programs"))],
)


def scenario(arm64, kind: str, *args: str, **kwargs) -> BoardScenario:
    """The program under the stub; for ftrace with the in-process agent preloaded."""
    return (BoardFastTrace if kind == "ftrace" else BoardScenario)(arm64, PROGRAM, *args, **kwargs)


def define_one(kind: str, where: str, *actions: str) -> tuple[str, ...]:
    return (ftrace if kind == "ftrace" else trace)(where, *actions)
ITERATIONS = 10
# "   0x0000000000000a98 <+44>:\tbl\t0x760 <atoi@plt>"
INSTRUCTION = re.compile(r"^\s+0x([0-9a-f]+) <\+(\d+)>:\t(\S+)(?:\t(.*))?$", re.M)


def instructions(listing: str) -> list[tuple[int, int, str, str]]:
    """(address, offset, mnemonic, operands) of each line of a disassemble."""
    return [(int(a, 16), int(o), m, ops or "") for a, o, m, ops in INSTRUCTION.findall(listing)]


def branch_target(operands: str) -> int:
    """The address an instruction's operand names (a branch's target, a literal's address)."""
    return int(re.match(r"0x([0-9a-f]+)", operands).group(1), 16)


def first(listing, mnemonic: str, operands: str = r".*") -> tuple[int, int, str, str]:
    """The first instruction MNEMONIC OPERANDS (a regex) of a listing."""
    return next(i for i in listing if i[2] == mnemonic and re.fullmatch(operands, i[3]))


def disassembled(s: BoardScenario) -> tuple[list, list]:
    """The instructions of main and record_hit, as gdb disassembles the program's file."""
    code = s.gdb("disassemble main", "disassemble record_hit", connect=False)
    return instructions(code.of("disassemble main")), instructions(code.of("disassemble record_hit"))


@KINDS
def test_branches_and_adrp_under_tracepoints(arm64, kind):
    s = scenario(arm64, kind, str(ITERATIONS))
    main, record = disassembled(s)

    call_record = first(main, "bl", r"0x[0-9a-f]+ <record_hit>")
    call_halfway = first(main, "bl", r"0x[0-9a-f]+ <halfway>")
    # The B.cond skipping the call of halfway(): taken in 9 iterations, not in one.
    skip_halfway = main[main.index(call_halfway) - 1]
    assert skip_halfway[2].startswith("b."), skip_halfway
    # The loop's condition, i < iterations || stop_file != NULL, at the end of the loop (a B
    # jumps there first): two B.cond branching back, the first run 11 times and taken 10 times,
    # the second (no stop file) run once, not taken.
    back_edge, stop_file_check = [i for i in main if i[2].startswith("b.") and branch_target(i[3]) < i[0]]
    # The first unconditional B (after atoi, argc > 1): run once.
    jump = first(main, "b")
    adrp = first(record, "adrp")
    after_adrp = record[record.index(adrp) + 1]

    # (where, actions, hits)
    sites = [
        (f"*(main + {call_record[1]})", "collect $pc", ITERATIONS),
        (f"*(main + {skip_halfway[1]})", "collect $pc", ITERATIONS),
        (f"*(main + {call_halfway[1]})", "collect $pc", 1),
        (f"*(main + {back_edge[1]})", "collect $pc", ITERATIONS + 1),
        (f"*(main + {stop_file_check[1]})", "collect $pc", 1),
        (f"*(main + {jump[1]})", "collect $pc", 1),
        (f"*(record_hit + {adrp[1]})", "collect $pc", ITERATIONS),
        # What the displaced instructions left: x0 from ADRP, x30 from BL.
        (f"*(record_hit + {after_adrp[1]})", "collect $pc, $x0", ITERATIONS),
        ("*record_hit", "collect $pc, $x30", ITERATIONS),
    ]
    define = s.define(*(define_one(kind, where, action) for where, action, _ in sites))
    walk = s.walk("$pc")
    r = s.gdb(
        *TO_MAIN, define, *trace_to("finished"), walk,
        "print/x (unsigned long) &counter & ~0xfff", "print/x (unsigned long) main",
        "tfind tracepoint 9", "print/x $x0", "tfind tracepoint 9", "print/x $x0",
        "tfind none", "tfind tracepoint 10", "print/x $x30", "tfind none", "continue",
    )
    numbers = range(2, 2 + len(sites))
    addresses = {n: tracepoint_address(r.of(define), n, fast=kind == "ftrace") for n in numbers}
    frames = r.frames(walk)
    # Every hit made a frame, at its tracepoint's address.
    assert Counter(tp for _, tp, _ in frames) == {n: hits for n, (_, _, hits) in zip(numbers, sites)}, frames
    assert all(pc == addresses[tp] for _, tp, pc in frames), (addresses, frames)
    r.trace_stopped("by a tstop command", sum(hits for _, _, hits in sites))

    # ADRP gave x0 the page of counter; BL left the return address after the call.
    page = r.value("print/x (unsigned long) &counter & ~0xfff")
    assert r.value("print/x $x0") == r.value("print/x $x0", 1) == page
    base = int(r.value("print/x (unsigned long) main"), 16)
    assert int(r.value("print/x $x30"), 16) == base + call_record[1] + 4

    # The program did exactly what it does untraced.
    s.ends_as_natively(r.of("continue", 2))


@KINDS
def test_adr_and_ldr_literal_under_tracepoints(arm64, kind):
    """traced.c in the tiny code model: record_hit reaches counter with ADR; main's tick
    path (a stop file given, 0 counted iterations: a tick every 10 rounds) loads stdout's GOT
    entry with LDR (literal). A breakpoint in round 25 creates the stop file: 26 rounds, ticks
    0, 10 and 20."""
    stop_file = f"/tmp/{arm64.board.spawn_name()}.stop"
    s = scenario(arm64, kind, "0", stop_file, program=arm64.board.payload / "traced_tiny")
    main, record = disassembled(s)
    adr = first(record, "adr", r"(x\d+), 0x[0-9a-f]+ <counter>")
    ldr = first(main, "ldr", r"(x\d+), 0x[0-9a-f]+")  # no brackets: the literal form
    after_adr, after_ldr = record[record.index(adr) + 1], main[main.index(ldr) + 1]
    adr_register, ldr_register = adr[3].split(",")[0], ldr[3].split(",")[0]
    # The GOT entry LDR loads, as an offset from main.
    literal = branch_target(ldr[3].split(", ")[1]) - main[0][0]
    got_entry = f"print/x *(unsigned long *) ((char *) main + {literal})"
    rounds = 26

    define = s.define(
        define_one(kind, f"*(record_hit + {adr[1]})", "collect $pc"),
        define_one(kind, f"*(record_hit + {after_adr[1]})", f"collect ${adr_register}"),
        define_one(kind, f"*(main + {ldr[1]})", "collect $pc"),
        define_one(kind, f"*(main + {after_ldr[1]})", f"collect ${ldr_register}"),
    )
    walk = s.walk("$pc")
    r = s.gdb(
        *TO_MAIN, define, f"break record_hit if iteration == {rounds - 1}", "tstart", "continue",
        arm64.board_command(f"touch {stop_file}"), "delete 6", "break finished", "continue", "tstop", "tstatus",
        walk, "print/x (unsigned long) &counter", got_entry,
        "tfind tracepoint 3", f"print/x ${adr_register}", "tfind none",
        "tfind tracepoint 5", f"print/x ${ldr_register}", "tfind none", "delete", "continue",
    )
    r.stopped_at(2, r"Breakpoint 7, finished \(")
    r.trace_stopped("by a tstop command", 2 * rounds + 2 * 3)
    frames = r.frames(walk)
    assert Counter(tp for _, tp, _ in frames) == {2: rounds, 3: rounds, 4: 3, 5: 3}, frames
    assert r.value(f"print/x ${adr_register}") == r.value("print/x (unsigned long) &counter")
    assert r.value(f"print/x ${ldr_register}", 1 if ldr_register == adr_register else 0) == r.value(got_entry)
    s.exited(r.of("continue", 3), 0)
    # What the program computes in 26 rounds: sum of 4i^2 + (i + 1000) + (5i + 2), i < 26.
    expected = sum(4 * i * i + i + 1000 + 5 * i + 2 for i in range(rounds))
    for line in ("tick 0", "tick 10", "tick 20", f"result={expected} counter={rounds}"):
        s.server.wait_for(rf"^{line}$")


CLASSES = (
    "cbz", "cbnz", "tbz", "tbnz", "b_cond", "ldrsw", "ldr_w", "ldr_x", "ldr_s", "ldr_d", "ldr_q", "prfm",
    "adr", "adrp", "bl", "b",
)


@KINDS
def test_every_class(arm64, kind):
    """a64_pc_relative.c: a tracepoint on one instruction of each pc-relative class (CBZ/CBNZ,
    TBZ/TBNZ, B.cond, LDR/LDRSW literal into general and SIMD&FP registers, PRFM literal,
    ADR, ADRP, BL, B), all at once: every hit is a frame at its address with that call's n,
    and the program, which folds what each instruction did into its sum, ends as untraced."""
    iterations = 6
    s = BoardScenario(arm64, "a64_pc_relative", str(iterations)) if kind == "trace" else BoardFastTrace(
        arm64, "a64_pc_relative", str(iterations)
    )
    define = s.define(*(define_one(kind, f"*at_{c}", "collect $x9, $pc") for c in CLASSES))
    walk = s.walk("$x9", "$pc")
    r = s.gdb(*TO_MAIN, define, *trace_to("finished"), walk, "tfind none", "delete", "continue")
    numbers = range(2, 2 + len(CLASSES))
    addresses = {n: tracepoint_address(r.of(define), n, fast=kind == "ftrace") for n in numbers}
    r.trace_stopped("by a tstop command", iterations * len(CLASSES))
    frames = r.frames(walk)
    for n in numbers:
        mine = [(x9, pc) for _, tp, x9, pc in frames if tp == n]
        assert mine == [(i, addresses[n]) for i in range(iterations)], (CLASSES[n - 2], mine)
    s.ends_as_natively(r.of("continue", 2))


def test_step_over_in_place(arm64):
    """No free address within a branch's reach of the code (no_pad_room.c reserves it all):
    the instruction under the tracepoint is stepped over in place (tpagent says so in
    --debug), every hit is collected and while-stepping works (gdbserver always steps)."""
    tpagent = not arm64.is_gdbserver
    s = BoardScenario(arm64, "no_pad_room", "5", options=("--debug",) if tpagent else ())
    shared.step_over_in_place(s, AARCH64, debug_says=tpagent)
