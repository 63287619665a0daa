"""tsave -r: the target writes the trace file itself (QTSave). gdb must read it exactly as it
reads the file it writes itself with plain tsave, and tpdump must read it too."""

import json
import os
import re
import subprocess
from pathlib import Path

import pytest

from harness import assert_in_order, hex_value

PROGRAM = "traced"
TO_MAIN = ("break main", "continue", "delete")

pytestmark = pytest.mark.tpagent_only


def skip_on_gdbserver(e2e):
    if e2e.is_gdbserver:
        pytest.skip("gdbserver does not implement QTSave (tsave -r)")


def run_and_save(e2e, *save_commands, options=()):
    program = e2e.program(PROGRAM)
    server = e2e.serve(program, "6", options=options)
    first = e2e.line(PROGRAM, "record_first")
    define = e2e.command_file(
        "tvariable $hits = 100",
        f"trace traced.c:{first}",
        "actions",
        "collect $regs, iteration, current, table[1]@3",
        "teval $hits = $hits + 1",
        "collect $hits",
        "end",
    )
    live = e2e.gdb(
        server.remote,
        *TO_MAIN,
        define,
        "break finished",
        "tstart",
        "continue",
        "tstop",
        "print/x &record_hit",
        *save_commands,
        program=program,
    )
    return program, live


VIEW = ("tstatus", "info tracepoints", "info tvariables", "tfind 4", "tdump", "info registers rip", "tfind end")


def view(e2e, program, runtime, trace_file):
    """What a new gdb shows of a trace file, command by command."""
    r = e2e.gdb(
        f'eval "symbol-file -o %lu {program}", {runtime} - (unsigned long)&record_hit',
        f"target tfile {trace_file}",
        *VIEW,
        program=program,
    )
    shown = {command: r.of(command) for command in VIEW}
    # Variables come in the order each writer keeps them: compare them as a set.
    shown["info tvariables"] = sorted(shown["info tvariables"].splitlines())
    return shown


def test_tsave_r_reads_like_gdbs_own_file(e2e):
    skip_on_gdbserver(e2e)
    ours, theirs = e2e.tmp / "target.tf", e2e.tmp / "host.tf"
    program, live = run_and_save(e2e, f"tsave -r {ours}", f"tsave {theirs}")
    assert live.of(f"tsave -r {ours}").strip() == "", live
    runtime = hex_value(live.of("print/x &record_hit"), r"= 0x([0-9a-f]+)$")

    a, b = view(e2e, program, runtime, ours), view(e2e, program, runtime, theirs)
    assert a == b
    # And it is a real trace, not two empty views agreeing.
    assert_in_order(a["tstatus"], r"^Collected 6 trace frames\.$")
    assert_in_order(a["tfind 4"], r"^Found trace frame 4, tracepoint 1$")
    assert_in_order(a["tdump"], r"^iteration = 4$", r"^\$hits = 105$")
    assert os.stat(ours).st_mode & 0o777 == 0o666 & ~current_umask()
    # Our reader sees the same frames in both (only the text sections may differ in layout).
    assert frames_of(ours) == frames_of(theirs)


def tpdump_path() -> Path:
    return Path(os.environ["TPAGENT_BIN"]).parent / "tpdump"


def frames_of(trace_file: Path) -> list[dict]:
    out = subprocess.run([str(tpdump_path()), "--json", str(trace_file)], capture_output=True, text=True, timeout=60)
    assert out.returncode == 0, out.stderr
    frames = [json.loads(line) for line in out.stdout.splitlines()]
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
