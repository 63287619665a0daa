"""Mistakes on the command line end the server at once with exit status 1, a message in
gdbserver's words ("... Exiting") and no program left behind: a COMM that is no host:port,
tty or stdio, a pid that names no process, a --save-dir that is no directory. And the
errors of tsave -r name the file gdb asked for."""

import re
import subprocess

import pytest

from harness import INFERIOR_CREATED, assert_in_order
from scenario import TO_MAIN, Scenario, trace, trace_to

PROGRAM = "basic"


def refused(e2e, *args: str) -> str:
    """What the server printed, having exited with status 1 and left nothing running."""
    server = e2e.start_server(*args)
    assert server.wait_exit() == 1, server.output
    assert server.output.rstrip().endswith("Exiting"), server.output
    if not e2e.is_gdbserver:
        # Checked before the program starts (gdbserver starts it, then kills it, for a tty).
        assert not INFERIOR_CREATED.search(server.output), server.output
    return server.output


@pytest.mark.parametrize("comm", ["garbage:1234", "tcp8:123"])
def test_host_that_does_not_resolve(e2e, comm):
    out = refused(e2e, comm, str(e2e.program(PROGRAM)))
    # "Name or service not known", or "Temporary failure in name resolution" without DNS.
    assert_in_order(out, rf"^{re.escape(comm)}: cannot resolve name: \w", r"^Exiting$")


@pytest.mark.parametrize(
    "device, reason", [("/dev/nonexistent", "No such file or directory"), ("file", "Inappropriate ioctl for device")]
)
def test_tty_that_cannot_be_opened(e2e, device, reason):
    if device == "file":  # a path that exists, and is no terminal
        device = str(e2e.tmp / "not-a-tty")
        open(device, "w").close()
    out = refused(e2e, device, str(e2e.program(PROGRAM)))
    # gdbserver says "Could not open remote device: Invalid argument." whatever the reason.
    detail = "" if e2e.is_gdbserver else rf" {re.escape(device)}: {reason}\.$"
    assert_in_order(out, rf"^Could not open remote device{detail}", r"^Exiting$")


@pytest.mark.tpagent_only("gdbserver listens on 99999 % 65536, and cannot 'resolve' abc")
@pytest.mark.parametrize(
    "comm, message",
    [
        (":99999", r"^:99999: invalid port number '99999' \(0 to 65535\)$"),
        (":abc", r"^:abc: invalid port number 'abc' \(0 to 65535\)$"),
        ("localhost:", r"^localhost:: no port number after ':'$"),
    ],
)
def test_invalid_port(e2e, comm, message):
    assert_in_order(refused(e2e, comm, str(e2e.program(PROGRAM))), message, r"^Exiting$")


def vanished_pid() -> int:
    """The pid of a process that has come and gone (and been reaped)."""
    gone = subprocess.Popen(["true"])
    gone.wait()
    return gone.pid


def test_attach_to_no_such_process(e2e):
    pid = vanished_pid()
    out = refused(e2e, "--attach", ":0", str(pid))
    assert_in_order(out, rf"^Cannot attach to process {pid}: No such process \(3\)$", r"^Exiting$")


@pytest.mark.tpagent_only("gdbserver has no --save-dir")
@pytest.mark.parametrize("kind, reason", [("missing", "No such file or directory"), ("file", "Not a directory")])
def test_save_dir_must_be_a_directory(e2e, kind, reason):
    save_dir = e2e.tmp / kind
    if kind == "file":
        save_dir.write_text("")
    out = refused(e2e, "--save-dir", str(save_dir), ":0", str(e2e.program(PROGRAM)))
    assert_in_order(out, rf"^--save-dir {re.escape(str(save_dir))}: {reason}$", r"^Exiting$")


# tsave -r writes a temporary file beside the one asked for, then renames it: its name must
# not be what the user is told about.
TEMPORARY_NAME = re.compile(r"\.tf\.\w{6}\b")


def saved_with_errors(e2e, *tsave_commands: str, options: tuple[str, ...] = ()):
    """traced.c, a trace of its 3 record_hit calls, then TSAVE_COMMANDS."""
    s = Scenario(e2e, "traced", "3", options=options)
    define = s.define(trace("record_hit", "collect iteration"))
    return s.gdb(*TO_MAIN, define, *trace_to("finished", tstatus=False), *tsave_commands)


@pytest.mark.tpagent_only("gdbserver does not implement QTSave (tsave -r)")
def test_tsave_r_errors_name_the_file_asked_for(e2e):
    in_missing_dir = e2e.tmp / "no-such-dir" / "trace.tf"
    a_directory = e2e.tmp
    r = saved_with_errors(e2e, f"tsave -r {in_missing_dir}", f"tsave -r {a_directory}")
    said = r.of(f"tsave -r {in_missing_dir}")
    assert_in_order(said, rf"cannot create {re.escape(str(in_missing_dir))}: No such file or directory")
    assert not TEMPORARY_NAME.search(said), said
    assert_in_order(r.of(f"tsave -r {a_directory}"), rf"cannot create {re.escape(str(a_directory))}: Is a directory")
    assert not list(e2e.tmp.glob("*.tf.*")), "a temporary file was left behind"


@pytest.mark.tpagent_only("gdbserver does not implement QTSave (tsave -r)")
def test_tsave_r_errors_in_the_save_dir_name_the_file_asked_for(e2e):
    save_dir = e2e.tmp / "saved"
    save_dir.mkdir()
    r = saved_with_errors(e2e, "tsave -r sub/trace.tf", options=("--save-dir", str(save_dir)))
    said = r.of("tsave -r sub/trace.tf")
    # What the user typed, and where that is.
    assert_in_order(
        said, rf"cannot create sub/trace\.tf \({re.escape(str(save_dir))}/sub/trace\.tf\): No such file or directory"
    )
    assert not TEMPORARY_NAME.search(said), said


@pytest.mark.tpagent_only("gdbserver does not implement QTSave (tsave -r)")
def test_tsave_r_in_the_save_dir_follows_no_link_out_of_it(e2e):
    """--save-dir confines tsave -r against symbolic links too: a folder link leading out of
    the directory is refused (nothing written outside), a link under the file's own name is
    replaced by the trace file (its target untouched), and a relative link that stays inside
    works."""
    save_dir, outside = e2e.tmp / "saved", e2e.tmp / "outside"
    save_dir.mkdir()
    outside.mkdir()
    (save_dir / "escape").symlink_to(outside)
    (save_dir / "sub").mkdir()
    (save_dir / "inner").symlink_to("sub")  # relative: an absolute link counts as leading out
    target = outside / "target.tf"
    target.write_text("keep")
    (save_dir / "linked.tf").symlink_to(target)
    r = saved_with_errors(
        e2e, "tsave -r escape/trace.tf", "tsave -r linked.tf", "tsave -r inner/trace.tf",
        options=("--save-dir", str(save_dir)),
    )
    said = r.of("tsave -r escape/trace.tf")
    assert_in_order(said, rf"cannot create {re.escape(str(save_dir))}/escape/trace\.tf: a symbolic link leads out of")
    assert not list(outside.glob("trace.tf*")), list(outside.iterdir())
    assert r.of("tsave -r linked.tf").strip() == "", r.of("tsave -r linked.tf")
    assert not (save_dir / "linked.tf").is_symlink()
    assert (save_dir / "linked.tf").read_bytes().startswith(b"\x7fTRACE0\n")
    assert target.read_text() == "keep"
    assert r.of("tsave -r inner/trace.tf").strip() == "", r.of("tsave -r inner/trace.tf")
    assert (save_dir / "sub" / "trace.tf").read_bytes().startswith(b"\x7fTRACE0\n")
    assert not list(save_dir.rglob("*.tf.*")), "a temporary file was left behind"


def test_program_that_does_not_exist(e2e):
    """gdbserver's last words before `Exiting`, which scripts wait for."""
    out = refused(e2e, ":0", str(e2e.tmp / "no-such-program"))
    assert_in_order(out, r"^During startup program exited with code 127\.$", r"^Exiting$")


def test_program_named_without_a_directory_is_the_one_in_the_current_directory(e2e):
    """As gdbserver does: `tpagent :0 prog` runs ./prog if it is there (not in PATH), and
    names it by its absolute path."""
    program = e2e.program(PROGRAM)
    server = e2e.start_server(":0", program.name, launcher=("env", "-C", str(program.parent)))
    server.wait_for(rf"^Process {re.escape(str(program))} created; pid = \d+$")
    e2e._listening(server)
