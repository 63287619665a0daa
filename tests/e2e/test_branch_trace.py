"""Branch trace (`record btrace`): gdb records the path threads take and shows it with
`record instruction-history`, `record function-call-history` and reverse execution in replay.
tpagent records it in software where the CPU has no BTS (AMD CPUs, most VMs, arm64 boards),
stepping each recorded thread; gdbserver then says "Target does not support branch tracing",
so these tests are tpagent's. Where the CPU's BTS records instead (an Intel CPU whose PMU perf
may use), what only the software recorder does is skipped, with what `monitor btrace` said.

branches.c: main calls work(3) and work(4), each looping over square() and recursing through
fact(5), then done(); "threads" first runs work() in two threads."""

import re
import shutil
import subprocess
from pathlib import Path

import pytest

from harness import assert_in_order
from rsp import decode_rle
from scenario import Scenario

PROGRAM = "branches"
pytestmark = pytest.mark.tpagent_only("gdbserver records branches only with Intel BTS or PT")

BTRACE_DTD = """<!ELEMENT btrace  (block* | pt) >
<!ATTLIST btrace  version CDATA   #FIXED "1.0">
<!ELEMENT block        EMPTY>
<!ATTLIST block        begin  CDATA   #REQUIRED
                       end    CDATA   #REQUIRED>
<!ELEMENT pt (pt-config?, raw?)>
<!ELEMENT pt-config (cpu?)>
<!ELEMENT cpu EMPTY>
<!ATTLIST cpu vendor   CDATA #REQUIRED
              family   CDATA #REQUIRED
              model    CDATA #REQUIRED
              stepping CDATA #REQUIRED>
<!ELEMENT raw (#PCDATA)>
"""
BTRACE_CONF_DTD = """<!ELEMENT btrace-conf	(bts?, pt?)>
<!ATTLIST btrace-conf	version	CDATA	#FIXED "1.0">
<!ELEMENT bts	EMPTY>
<!ATTLIST bts	size	CDATA	#IMPLIED>
<!ELEMENT pt	EMPTY>
<!ATTLIST pt	size	CDATA	#IMPLIED>
"""

TO_WORK = ("break work", "continue")


def skip_where_the_cpu_records(monitor_btrace: str) -> None:
    """Skips a test of the software recorder where hardware BTS records (tpagent takes it
    whenever perf gives it, whatever btrace-method says)."""
    if re.search(r"^Thread \d+: hardware BTS", monitor_btrace, re.M):
        pytest.skip(f"the CPU's BTS records here, not the software recorder: {monitor_btrace.strip()}")


def recorded(info_record: str) -> tuple[int, int, int]:
    m = re.search(r"Recorded (\d+) instructions in (\d+) functions \((\d+) gaps\)", info_record)
    assert m, info_record
    return int(m.group(1)), int(m.group(2)), int(m.group(3))


METHODS = ["block-ends", "block-steps", "single-steps"]


@pytest.mark.parametrize("method", METHODS)
def test_history_of_calls_loops_and_recursion(e2e, method):
    s = Scenario(e2e, PROGRAM)
    r = s.gdb(
        f"monitor set btrace-method {method}", *TO_WORK, "record btrace bts", "monitor btrace",
        "break done", "continue", "info record",
        "set record function-call-history-size unlimited", "record function-call-history /ilc",
        "record instruction-history -", "record stop", "delete", "continue",
    )
    skip_where_the_cpu_records(r.of("monitor btrace"))
    assert f"software, {method.replace('-', ' ')}" in r.of("monitor btrace"), r.of("monitor btrace")
    info = r.of("info record")
    assert_in_order(info, r"Active record target: record-btrace", r"Recording format: Branch Trace Store\.",
                    r"Buffer size: 64kB\.")
    instructions, functions, gaps = recorded(info)
    assert gaps == 0 and instructions > 100 and functions == 19, info
    # From work(3)'s start: square three times, then fact(5) down to fact(1) and back up,
    # back in work, in main, and the call of done.
    history = r.of("record function-call-history /ilc")
    calls = [line.split("\t") for line in history.splitlines() if re.match(r"^\d+\t", line)]
    names = [c[1].strip() for c in calls]
    indent = [len(c[1]) - len(c[1].lstrip()) for c in calls]
    assert names == ["work", "square", "work", "square", "work", "square", "work"] + ["fact"] * 9 + [
        "work", "main", "done"], history
    assert indent[1] == indent[0] + 2 and indent[-2] == indent[0] - 2, history
    assert [indent[7 + k] - indent[7] for k in range(9)] == [0, 2, 4, 6, 8, 6, 4, 2, 0], history
    assert all(re.match(r"inst \d+,\d+\s+at \S*branches\.c:\d+(,\d+)?$", "\t".join(c[2:])) for c in calls), history
    # The last instructions: work's return into main, main's call of done.
    insns = r.of("record instruction-history -")
    assert_in_order(insns, r"<work\+\d+>:\s+ret", r"<main\+\d+>:", r"call\s+0x[0-9a-f]+ <done>", r"<done\+0>:")
    assert "Process record is stopped" in r.of("record stop"), r.of("record stop")
    # Recording off, the program runs on as if never recorded.
    assert re.search(r"\[Inferior 1 \(process \d+\) exited normally\]", r.of("continue", 2)), r.of("continue", 2)
    s.server.wait_for(r"^result 134$")


def test_reverse_execution_and_goto_in_replay(e2e):
    s = Scenario(e2e, PROGRAM)
    r = s.gdb(
        *TO_WORK, "record btrace bts", "break done", "continue", "reverse-stepi", "reverse-finish",
        "reverse-next", "reverse-next", "info record", "record goto 30", "bt", "next",
        "record goto end", "info record",
    )
    assert re.search(r"void done\(long result\)", r.of("reverse-stepi")), r.of("reverse-stepi")
    line = s.line("first done")
    assert re.search(rf"in main \(.*\) at \S*branches\.c:{line}\n{line}\s+done\(r\);", r.of("reverse-finish")), r.of("reverse-finish")
    # Back over the call of work(3), to the start of the recording: work's breakpoint.
    assert re.search(r"Breakpoint 1, work \(n=", r.of("reverse-next", 1)), r.of("reverse-next", 1)
    assert "Replay in progress.  At instruction 1." in r.of("info record"), r.of("info record")
    assert_in_order(r.of("bt"), r"#0  square \(", r"#1  0x[0-9a-f]+ in work \(", r"#2  0x[0-9a-f]+ in main \(")
    assert re.search(r"^work \(n=.*\) at \S*branches\.c:\d+", r.of("next"), re.M), r.of("next")
    assert re.search(r"#0  done \(result=125\)", r.of("record goto end")), r.of("record goto end")
    assert "Replay in progress" not in r.of("info record", 1), r.of("info record", 1)


def test_each_thread_is_recorded(e2e):
    s = Scenario(e2e, PROGRAM, "threads")
    # (done in the thread recorded from thread_main on: the third, if main makes it only after
    # the recording began, is recorded from when gdb sees it, and may reach done() first.)
    r = s.gdb(
        "tbreak thread_main", "continue", "record btrace", "break done thread 2", "continue",
        "thread apply all info record", "set record function-call-history-size unlimited",
        "record function-call-history", "record stop",
        "delete", "continue",
    )
    assert re.search(r"hit Breakpoint 2, done \(", r.of("continue", 1)), r.of("continue", 1)
    # Every thread gdb knows of is recorded (the third, if main has made it by then, from its
    # creation); the one at done() went through work().
    infos = r.of("thread apply all info record")
    counts = re.findall(r"Recorded (\d+) instructions in \d+ functions \(0 gaps\) for thread", infos)
    assert len(counts) >= 2 and len(counts) == len(re.findall(r"^Thread \d+ \(", infos, re.M)), infos
    assert max(int(c) for c in counts) > 50, infos
    history = r.of("record function-call-history")
    assert_in_order(history, r"\bwork\b", r"\bsquare\b", r"\bfact\b")
    s.server.wait_for(r"^result 134$")


@pytest.mark.parametrize("gdb_stops", [True, False], ids=["signal stops", "signal passed"])
def test_a_signal_handler_entered_while_recording(e2e, gdb_stops):
    """The recorded thread is given a signal as it steps: it enters its handler, which is
    recorded; gdb hears of the signal only if it asked to, and never of a SIGTRAP."""
    s = Scenario(e2e, PROGRAM, "signal")
    handle = [] if gdb_stops else ["handle SIGUSR1 nostop noprint pass"]
    r = s.gdb(
        *handle, "break main", "continue", "record btrace", "break done", "continue",
        *(["continue"] if gdb_stops else []), "set record function-call-history-size unlimited",
        "record function-call-history", "record stop", "delete", "continue",
    )
    if gdb_stops:
        assert "Program received signal SIGUSR1" in r.of("continue", 1), r.of("continue", 1)
    stopped = r.of("continue", 2 if gdb_stops else 1)
    assert "SIGTRAP" not in stopped and re.search(r"Breakpoint 2, done \(", stopped), stopped
    assert_in_order(r.of("record function-call-history"), r"\bon_signal\b", r"\bwork\b", r"\bdone\b")
    s.server.wait_for(r"^signals handled 1$")
    s.server.wait_for(r"^result 134$")


@pytest.mark.parametrize("mode", ["", "exec"], ids=["vfork child exits", "vfork child execs"])
def test_a_vfork_child_runs_untouched_in_the_memory_it_shares(e2e, mode):
    """The recorded parent vforks: its child runs in the parent's memory, where the recorder
    puts no breakpoint while the child is there (the child, not traced, would die of it)."""
    s = Scenario(e2e, "vforker", *([mode] if mode else []))
    r = s.gdb("break main", "continue", "record btrace", "break after_vfork", "continue",
              "info record", "record stop", "delete", "continue")
    assert re.search(r"Breakpoint 2, after_vfork \(pid=\d+\)", r.of("continue", 1)), r.of("continue", 1)
    assert recorded(r.of("info record"))[0] > 10
    s.server.wait_for(rf"^parent: child exited {0 if mode else 5}$")


def test_trace_is_read_by_deltas_and_stitched_across_stops(e2e):
    s = Scenario(e2e, PROGRAM)
    r = s.gdb(
        *TO_WORK, "record btrace bts", "info record", "break square", "continue", "info record",
        "set debug remote 1", "continue", "info record", "set debug remote 0",
        "record function-call-history",
    )
    first, second = recorded(r.of("info record", 1)), recorded(r.of("info record", 2))
    assert second[0] > first[0] and second[2] == 0, (first, second)
    # The second stop's trace came as a delta, the block gdb stitches to what it had.
    delta = r.of("continue", 2) + r.of("info record", 2)
    assert re.search(r"qXfer:btrace:read:delta:0,", delta), delta
    assert re.search(r'<block begin="0x0" end="0x[0-9a-f]+"/>', delta), delta
    assert "qXfer:btrace:read:all" not in delta, delta
    history = r.of("record function-call-history")
    assert_in_order(history, r"\bwork\b", r"\bsquare\b", r"\bwork\b", r"\bsquare\b")


CODE_DUMP = """import re, sys
pid, out = sys.argv[1], sys.argv[2]
with open(f"/proc/{pid}/maps") as maps, open(f"/proc/{pid}/mem", "rb") as mem, open(out, "wb") as dump:
    for line in maps:
        lo, hi, perms = re.match(r"([0-9a-f]+)-([0-9a-f]+) (\\S+)", line).groups()
        if "x" in perms and "[v" not in line:
            mem.seek(int(lo, 16))
            dump.write(mem.read(int(hi, 16) - int(lo, 16)))
"""


def test_stopping_the_recording_leaves_the_program_as_it_was(e2e, tmp_path):
    s = Scenario(e2e, PROGRAM)
    dump = tmp_path / "dump.py"
    dump.write_text(CODE_DUMP)
    before, after = tmp_path / "before", tmp_path / "after"
    r = s.gdb(
        *TO_WORK, f"shell python3 {dump} {s.pid} {before}", "x/32xb work", "record btrace",
        "monitor btrace", "break done", "continue", "record stop", "monitor btrace",
        f"shell python3 {dump} {s.pid} {after}", "x/32xb work", "delete", "continue",
    )
    # Every executable byte of the program and its libraries is as it was (gdb's breakpoints
    # are out while it is stopped; the recorder's are gone).
    assert before.stat().st_size > 100000 and before.read_bytes() == after.read_bytes()
    assert re.search(r"Thread \d+: (software|hardware)", r.of("monitor btrace")), r.of("monitor btrace")
    assert "No thread's branches are being recorded." in r.of("monitor btrace", 1)
    assert r.of("x/32xb work") == r.of("x/32xb work", 1)
    assert re.search(r"\[Inferior 1 \(process \d+\) exited normally\]", r.of("continue", 2))
    s.server.wait_for(r"^result 134$")


def test_a_gdb_that_connects_takes_up_the_recording(e2e):
    """The recording goes on after gdb disconnects (as the manual says of remote btrace); the
    next gdb reads each thread's btrace-conf as it connects and is recording at once."""
    s = Scenario(e2e, PROGRAM)
    s.gdb(*TO_WORK, "record btrace bts", "next", "next", "disconnect")
    r = s.gdb("info record", "next", "next", "info record", "record function-call-history")
    assert "Target is recording using Branch Trace Store." in r.output, r.transcript
    assert "Active record target: record-btrace" in r.of("info record"), r.of("info record")
    assert recorded(r.of("info record", 1))[0] > 0
    assert_in_order(r.of("record function-call-history"), r"\bwork\b", r"\bsquare\b")


def test_intel_pt_is_refused_with_the_reason_and_plain_record_btrace_falls_back(e2e):
    s = Scenario(e2e, PROGRAM)
    r = s.gdb(*TO_WORK, "record btrace pt", "record btrace", "info record")
    assert "Intel Processor Trace is not available:" in r.of("record btrace pt"), r.of("record btrace pt")
    assert "Recording format: Branch Trace Store." in r.of("info record"), r.of("info record")


def test_the_hardware_backend_where_the_cpu_has_bts(e2e):
    """Intel CPUs with a PMU the kernel lets perf use: BTS records, and no stepping."""
    cpuinfo = Path("/proc/cpuinfo").read_text()
    if "GenuineIntel" not in cpuinfo or " bts" not in cpuinfo:
        pytest.skip("no Intel BTS on this CPU: the software backend records (tested above)")
    s = Scenario(e2e, PROGRAM)
    r = s.gdb(*TO_WORK, "record btrace bts", "monitor btrace", "break done", "continue", "info record")
    if "software" in r.of("monitor btrace"):
        pytest.skip("perf refused BTS here: " + r.of("monitor btrace"))
    assert "hardware BTS" in r.of("monitor btrace"), r.of("monitor btrace")
    assert recorded(r.of("info record"))[0] > 100


# --------------------------------------------------------------------------- the packets


def validate(xml: str, dtd: str, tmp: Path) -> None:
    xmllint = shutil.which("xmllint")
    if not xmllint:
        pytest.fail("xmllint (libxml2-utils) is needed to check the documents against the DTDs")
    doc, schema = tmp / "doc.xml", tmp / "doc.dtd"
    doc.write_text(xml)
    schema.write_text(dtd)
    out = subprocess.run([xmllint, "--noout", "--nonet", "--dtdvalid", str(schema), str(doc)],
                         capture_output=True, text=True)
    assert out.returncode == 0, out.stderr + xml


def xfer(rsp, name: str) -> str:
    """A whole qXfer document, read in chunks as gdb reads it."""
    data, offset = "", 0
    while True:
        reply = rsp.request(f"{name}:{offset:x},200")
        assert reply[:1] in ("m", "l"), reply
        data += reply[1:]
        offset += len(reply) - 1
        if reply[0] == "l":
            return data


def test_documents_follow_the_dtds_and_bad_requests_get_errors(e2e, tmp_path):
    s = Scenario(e2e, PROGRAM)
    with s.raw() as rsp:
        for feature in ("Qbtrace:bts", "Qbtrace:off", "Qbtrace:pt", "qXfer:btrace:read",
                        "qXfer:btrace-conf:read", "Qbtrace-conf:bts:size"):
            assert rsp.features.get(feature) == "+", rsp.features
        tid = s.pid
        assert rsp.request(f"Hg{tid:x}") == "OK"
        assert rsp.request("Qbtrace-conf:bts:size=zz") == "E.Bad size value."
        assert rsp.request("Qbtrace-conf:lbr:size=0x10") == "E.Bad Qbtrace configuration option."
        assert rsp.request("Qbtrace:lbr") == "E.Bad Qbtrace operation.  Use bts, pt, or off."
        assert rsp.request("qXfer:btrace:read:all:0,100") == "E.Btrace not enabled."
        assert rsp.request("Qbtrace:off") == "E.Branch tracing not enabled."
        # A ring of two branches, so that a delta overflows.
        assert rsp.request("Qbtrace-conf:bts:size=0x20") == "OK"
        assert rsp.request("Qbtrace:bts") == "OK"
        assert rsp.request("Qbtrace:bts") == "E.Btrace already enabled."
        conf = xfer(rsp, "qXfer:btrace-conf:read:")
        validate(conf, BTRACE_CONF_DTD, tmp_path)
        assert rsp.request("qXfer:btrace:read:sometimes:0,100") == "E.Bad annex."
        # A perf ring is a page or more: the ring of two is the software recorder's.
        # (Run-length encoded where the text repeats a character: a thread id's digits.)
        skip_where_the_cpu_records(bytes.fromhex(decode_rle(rsp.request("qRcmd," + b"btrace".hex()))).decode())
        assert '<bts size="0x20"/>' in conf, conf
        for _ in range(40):
            assert re.match(r"^T05", rsp.request("vCont;s")), "a step"
        assert rsp.request("qXfer:btrace:read:delta:0,100") == "E.Overflow."
        everything = xfer(rsp, "qXfer:btrace:read:all")
        validate(everything, BTRACE_DTD, tmp_path)
        blocks = re.findall(r'<block begin="0x([0-9a-f]+)" end="0x([0-9a-f]+)"/>', everything)
        assert len(blocks) == 2, everything
        assert int(blocks[0][1], 16) == rsp.pc()  # the newest block ends at the pc
        assert xfer(rsp, "qXfer:btrace:read:new").count("<block") == 0  # nothing since
        delta = xfer(rsp, "qXfer:btrace:read:delta")
        validate(delta, BTRACE_DTD, tmp_path)
        assert re.findall(r"<block [^>]*>", delta) == [f'<block begin="0x0" end="0x{rsp.pc():x}"/>'], delta
        assert rsp.request("Qbtrace:off") == "OK"
        assert rsp.request("qXfer:btrace-conf:read::0,100") == "E.Btrace not enabled."
