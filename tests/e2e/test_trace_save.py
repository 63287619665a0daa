"""tsave -r: the target writes the trace file itself (QTSave). gdb must read it exactly as it
reads the file it writes itself with plain tsave, and tpdump must read it too."""

import os
import re
from pathlib import Path

import pytest

import shared
from scenario import Scenario, parse_tdump, parse_tfind, parse_tstatus, tpdump

PROGRAM = "traced"

pytestmark = pytest.mark.tpagent_only


def skip_on_gdbserver(e2e):
    if e2e.is_gdbserver:
        pytest.skip("gdbserver does not implement QTSave (tsave -r)")


def run_and_save(e2e, *save_commands, options=()):
    s = Scenario(e2e, PROGRAM, "6", options=options)
    return s, s.trace_and_save(shared.hits_define(s, registers=True), *save_commands, anchor="record_hit")


VIEW = ("tstatus", "info tracepoints", "info tvariables", "tfind 4", "tdump", "info registers rip", "tfind end")


def view(s: Scenario, live, trace_file):
    """What a new gdb shows of a trace file, command by command."""
    r = s.open_trace_file(trace_file, *VIEW, live=live)
    shown = {command: r.of(command) for command in VIEW}
    # Variables come in the order each writer keeps them: compare them as a set.
    shown["info tvariables"] = sorted(shown["info tvariables"].splitlines())
    return shown


def test_tsave_r_reads_like_gdbs_own_file(e2e):
    skip_on_gdbserver(e2e)
    ours, theirs = e2e.tmp / "target.tf", e2e.tmp / "host.tf"
    s, live = run_and_save(e2e, f"tsave -r {ours}", f"tsave {theirs}")
    assert live.of(f"tsave -r {ours}").strip() == "", live

    a, b = view(s, live, ours), view(s, live, theirs)
    assert a == b
    # And it is a real trace, not two empty views agreeing.
    assert parse_tstatus(a["tstatus"]).collected == 6, a["tstatus"]
    assert parse_tfind(a["tfind 4"]) == (4, 1)
    parse_tdump(a["tdump"]).shows(r"^iteration = 4$", r"^\$hits = 105$")
    assert os.stat(ours).st_mode & 0o777 == 0o666 & ~current_umask()
    # Our reader sees the same frames in both (only the text sections may differ in layout).
    assert frames_of(ours) == frames_of(theirs)


def frames_of(trace_file: Path) -> list[dict]:
    frames = tpdump(trace_file)
    for frame in frames:
        frame.pop("offset")  # where the frame starts depends on the text section's length
    return frames


def test_tpdump_reads_the_saved_file(e2e):
    skip_on_gdbserver(e2e)
    ours = e2e.tmp / "target.tf"
    run_and_save(e2e, f"tsave -r {ours}")
    frames = frames_of(ours)
    assert len(frames) == 6
    assert all(f["tracepoint"] == 2 for f in frames)
    assert [f["variables"][0]["value"] for f in frames] == list(range(101, 107))


def test_save_dir_confines_the_file(e2e):
    skip_on_gdbserver(e2e)
    allowed = e2e.tmp / "saved"
    allowed.mkdir()
    outside = e2e.tmp / "outside.tf"
    _, live = run_and_save(
        e2e,
        "tsave -r inside.tf",
        f"tsave -r {outside}",
        "tsave -r ../escape.tf",
        options=("--save-dir", str(allowed)),
    )
    assert (allowed / "inside.tf").read_bytes().startswith(b"\x7fTRACE0\n")
    assert not outside.exists() and not (e2e.tmp / "escape.tf").exists()
    assert re.search(r"trace files go in", live.of(f"tsave -r {outside}")), live
    assert re.search(r"'\.\.' is not allowed", live.of("tsave -r ../escape.tf")), live


def current_umask() -> int:
    mask = os.umask(0)
    os.umask(mask)
    return mask
