"""Branch trace (`record btrace`) on the arm64 board, where no CPU feature records branches:
tpagent records them in software (block ends: a breakpoint at the next branch the arm64
decoder finds); Debian's arm64 gdbserver has no branch tracing.

branches.c: main calls work(3) and work(4), each looping over square() and recursing through
fact(5), then done()."""

import re

from harness import assert_in_order
from board import BoardScenario


def test_record_btrace(arm64):
    s = BoardScenario(arm64, "branches")
    r = s.gdb(
        "break work", "continue", "record btrace", "monitor btrace", "break done", "continue",
        "info record", "record instruction-history /f -", "reverse-stepi", "record goto begin",
        "record goto end", "record stop", "delete", "continue",
    )
    if arm64.server_bin.is_gdbserver:
        assert "Target does not support branch tracing" in r.of("record btrace"), r.of("record btrace")
        return
    assert re.search(r"software, block ends", r.of("monitor btrace")), r.of("monitor btrace")
    m = re.search(r"Recorded (\d+) instructions in \d+ functions \(0 gaps\)", r.of("info record"))
    assert m and int(m.group(1)) > 100, r.of("info record")
    # The last ones: work returns to main, which calls done.
    assert_in_order(r.of("record instruction-history /f -"), r"\bret\b", r"\bbl\s+0x[0-9a-f]+ <done>")
    assert re.search(r"#0  work \(n=", r.of("record goto begin")), r.of("record goto begin")
    assert re.search(r"#0  done \(result=125\)", r.of("record goto end")), r.of("record goto end")
    assert re.search(r"exited normally", r.of("continue", 2)), r.of("continue", 2)
