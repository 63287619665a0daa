"""Faults: `tsave -r` into a directory that is full, or read-only. The target's write fails:
gdb prints an error naming the cause, no partial or temporary file is left, a file already
under that name is intact, the trace is all there, and the session goes on (a tsave -r into a
good directory then works, and the program runs to its end).

We run as root, so permission bits stop no write: the directory is a real filesystem, a
64 KiB tmpfs (remounted read-only for the second case), mounted in a mount namespace of the
server's own (`unshare -m`, private propagation: the host never sees it). The launcher makes
it, puts the old trace file in it, and execs the server, which starts the program in that
namespace too. The test looks into the directory through /proc/SERVER/root, which resolves
paths in the server's namespace: gdb's `shell` (on the host) lists it and prints the old file
right after the failed tsave -r, while the server is still up.
"""

import shlex
import subprocess

import pytest

from scenario import TO_MAIN, TO_THE_END, Scenario, measure_trace_file, record_reliability, trace, trace_to

pytestmark = pytest.mark.tpagent_only("gdbserver does not implement QTSave (tsave -r)")

PROGRAM = "traced"
TRACEPOINT = trace("record_hit", "collect $regs", "collect iteration")
TMPFS_BYTES = 64 << 10
SIZE = f"{TMPFS_BYTES >> 10}k"
OLD = b"the trace saved before\n"
# tpagent's error (E.text, which gdb quotes) for each: what failed, and errno's words.
CAUSES = {"full": "cannot write {}: No space left on device", "read-only": "cannot create {}: Read-only file system"}


def mount_script(directory, read_only: bool) -> str:
    """sh -c SCRIPT sh SERVER ARGS...: a tmpfs on DIRECTORY holding trace.tf (OLD), made
    read-only if asked, then the server in its place."""
    d = shlex.quote(str(directory))
    steps = [
        f"mount -t tmpfs -o size={SIZE} none {d}",
        f"printf %s {shlex.quote(OLD.decode())} > {d}/trace.tf",
        *([f"mount -o remount,ro {d}"] if read_only else []),
        'exec "$@"',
    ]
    return " && ".join(steps)


def skip_without_mounts(e2e) -> None:
    """Skip where this process may not make a mount namespace and mount a tmpfs in it."""
    probe = e2e.tmp / "probe"
    probe.mkdir()
    try:
        run = subprocess.run(["unshare", "-m", "sh", "-c", mount_script(probe, True), "sh", "true"],
                             capture_output=True, text=True, timeout=20)
    except FileNotFoundError:
        pytest.skip("no unshare command")
    if run.returncode != 0:
        pytest.skip(f"cannot mount a tmpfs in a private mount namespace (unshare -m): {run.stderr.strip()}")


@pytest.mark.parametrize("kind", ["full", "read-only"])
def test_tsave_r_into_a_bad_directory(e2e, kind):
    skip_without_mounts(e2e)
    # A frame's size is the CPU's (its register block): enough frames for a file twice the
    # filesystem's size, measured here.
    frames = measure_trace_file(e2e, PROGRAM, TRACEPOINT).frames_over(2 * TMPFS_BYTES)
    last = frames - 1
    directory = e2e.tmp / "traces"
    directory.mkdir()
    launcher = ("unshare", "-m", "sh", "-c", mount_script(directory, kind == "read-only"), "sh")
    s = Scenario(e2e, PROGRAM, str(frames), launcher=launcher)
    # The directory as the server sees it, from outside its namespace.
    inside = f"/proc/{s.server.pid}/root{directory}"
    old, new, good = directory / "trace.tf", directory / "new.tf", e2e.tmp / "good.tf"
    listing, old_content = f"shell ls -A {inside}", f"shell cat {inside}/trace.tf; echo '<end>'"
    define = s.define(TRACEPOINT)
    r = s.gdb(
        *TO_MAIN, define, "print/x &record_hit", *trace_to("finished", tstatus=False),
        f"tsave -r {old}", f"tsave -r {new}", listing, old_content,
        "tstatus", f"tfind {last}", "print iteration", "tfind none", f"tsave -r {good}", *TO_THE_END,
    )
    for target in (old, new):
        error = CAUSES[kind].format(target)
        assert r.of(f"tsave -r {target}") == f"Target returns error code '.{error}'.\n", r.of(f"tsave -r {target}")
    # Nothing but the old file, whole: no partial file, no temporary one.
    assert r.of(listing).split() == ["trace.tf"], r.of(listing)
    assert r.of(old_content) == OLD.decode() + "<end>\n", r.of(old_content)
    # The trace is all there, the session goes on: the good directory gets it whole.
    assert r.trace_stopped("by a tstop command", frames)
    assert r.value("print iteration") == str(last)
    assert r.of(f"tsave -r {good}").strip() == ""
    # The premise: the trace is larger than the whole filesystem.
    assert good.stat().st_size > TMPFS_BYTES, (good.stat().st_size, frames)
    s.ends_as_natively(r.of("continue", 2))
    t = s.open_trace_file(good, "tstatus", f"tfind {last}", "print iteration", "print $rsi", live=r)
    assert t.status().collected == frames, t.status()
    assert (t.value("print iteration"), t.value("print $rsi")) == (str(last), "3")
    # The host never saw the tmpfs: its directory is still the empty one made above.
    assert list(directory.iterdir()) == []
    record_reliability("Disk full or read-only during `tsave -r`", 1, frames)
