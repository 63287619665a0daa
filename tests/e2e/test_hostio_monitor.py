"""Host I/O (vFile) and monitor commands (qRcmd), driven from gdb."""

import re

import pytest

from harness import assert_in_order
from scenario import Scenario

PROGRAM = "basic"


def test_target_sysroot_reads_libraries_through_the_server(e2e):
    """With gdb's default `target:` sysroot, shared libraries come over vFile:open/pread."""
    s = Scenario(e2e, PROGRAM)
    r = s.gdb(
        "set sysroot target:", s.connect, "break sum_squares", "continue", "info sharedlibrary",
        'print (int) strlen("abcd")',
        connect=False,
    )
    assert re.search(r"Reading /\S*libc\.so\.6 from remote target", r.transcript), r
    assert re.search(r"0x[0-9a-f]+\s+0x[0-9a-f]+\s+Yes.*target:/\S*libc\.so\.6", r.of("info sharedlibrary")), r
    # A call into libc works, so its symbols really were loaded from the transferred file.
    assert r.of('print (int) strlen("abcd")').strip() == "$1 = 4"


def test_remote_put_get_delete(e2e):
    """`remote put/get/delete` use vFile:open/pwrite/pread/close/unlink."""
    local, remote, back = (e2e.tmp / name for name in ("local.bin", "remote.bin", "back.bin"))
    payload = bytes(range(256)) * 40 + b"#$}*end"  # every byte value, and the RSP's reserved ones
    local.write_bytes(payload)
    get_gone = f"remote get {remote} {e2e.tmp / 'gone.bin'}"
    s = Scenario(e2e, PROGRAM)
    r = s.gdb(f"remote put {local} {remote}", f"remote get {remote} {back}", f"remote delete {remote}", get_gone)
    assert remote.exists() is False
    assert back.read_bytes() == payload
    assert re.search(r"No such file or directory", r.of(get_gone)), r


@pytest.mark.tpagent_only("gdbserver has no --hostio-dir")
def test_hostio_dir_is_the_root_of_every_file_request(e2e):
    """--hostio-dir DIR: gdb's vFile names resolve inside DIR as if it were / (absolute names,
    `..` and symbolic links alike): files in DIR are read, written and deleted, nothing
    outside it can be reached."""
    root, outside = e2e.tmp / "root", e2e.tmp / "outside"
    root.mkdir()
    outside.mkdir()
    (root / "hello.txt").write_text("inside")
    (outside / "secret.txt").write_text("outside")
    (root / "escape").symlink_to(outside / "secret.txt")  # absolute: taken inside the root
    (root / "up").symlink_to("../outside/secret.txt")
    local = e2e.tmp / "local.bin"
    local.write_bytes(b"put")
    gets = {
        name: f"remote get {name} {e2e.tmp / ('got-' + str(n))}"
        for n, name in enumerate(("/hello.txt", "hello.txt", f"{outside}/secret.txt", "../outside/secret.txt",
                                  "/escape", "/up"))
    }
    s = Scenario(e2e, PROGRAM, options=("--hostio-dir", str(root)))
    r = s.gdb(*gets.values(), f"remote put {local} /made.bin", "remote delete /hello.txt")
    assert (e2e.tmp / "got-0").read_text() == "inside"
    assert (e2e.tmp / "got-1").read_text() == "inside"
    for n, name in enumerate(gets):
        if n >= 2:
            assert not (e2e.tmp / f"got-{n}").exists(), name
            assert re.search(r"No such file or directory", r.of(gets[name])), r.of(gets[name])
    assert (root / "made.bin").read_bytes() == b"put"
    assert not (root / "hello.txt").exists()
    assert (outside / "secret.txt").read_text() == "outside"


def test_monitor_commands(e2e):
    if e2e.is_gdbserver:
        pytest.skip("tpagent's monitor text")
    s = Scenario(e2e, PROGRAM)
    r = s.gdb(
        "monitor help", "monitor set debug 1", "print 1", "monitor set debug 0", "monitor frobnicate", "monitor exit"
    )
    assert_in_order(r.of("monitor help"), r"set debug <0\|1>", r"set remote-debug <0\|1>", r"set debug-format",
                    r"exit", r"help")
    assert "Debug output enabled." in r.of("monitor set debug 1")
    # With debugging on, the server logged the packets of `print 1`'s neighbours.
    s.server.wait_for(r"<- ")
    assert "Unknown monitor command." in r.of("monitor frobnicate")
    assert s.server.wait_exit() == 0


# What gdbserver prints for each (its own help text aside), and what the server's stderr shows.
MONITOR_LIKE_GDBSERVER = [
    ("monitor", ["Unknown monitor command.", "The following monitor commands are supported:",
                 "set remote-debug <0|1>", "set debug-format option1[,option2,...]", "Protocol error with Rcmd"]),
    ("monitor set remote-debug 2", ["Unknown monitor command.", "The following monitor", "Protocol error with Rcmd"]),
    ("monitor set remote-debug 1", ["Protocol debug output enabled."]),
    ("maint flush register-cache", []),  # so that the next command asks for the registers again
    ("print $pc != 0", ["$1 = 1"]),
    ("monitor set remote-debug 0", ["Protocol debug output disabled."]),
    ("monitor set debug-format none", ["All extra debug format options disabled."]),
    ("monitor set debug-format timestamp,all",
     ["Timestamps will be added to debug output.", "All extra debug format options enabled."]),
    ("monitor set debug-format bogus", ['Unknown debug-format argument: "bogus"', "The following monitor",
                                        "Protocol error with Rcmd"]),
    ("monitor set debug-format none", ["All extra debug format options disabled."]),
    ("monitor set libthread-db-search-path /nowhere", ["libthread-db-search-path set to `/nowhere'"]),
    ("monitor set libthread-db-search-path", ["libthread-db-search-path set to `$sdir:$pdir'"]),
    ("monitor set debug 1", ["Debug output enabled."]),
    ("flushregs", []),
    ("print $sp != 0", ["$2 = 1"]),
    ("monitor set debug 0", ["Debug output disabled."]),
]


def test_monitor_commands_as_gdbserver_answers_them(e2e):
    """`monitor` alone, remote-debug and debug-format: gdbserver's words, and its error for a
    command it does not know (so that a script with a typo stops). Runs against both."""
    s = Scenario(e2e, PROGRAM)
    r = s.gdb(*(command for command, _ in MONITOR_LIKE_GDBSERVER))
    for command, expected in MONITOR_LIKE_GDBSERVER:
        assert_in_order(r.of(command), *(re.escape(text) for text in expected))
    if e2e.is_gdbserver:
        return
    # remote-debug: the packets only, with timestamps; debug-format none: no timestamps.
    packets = [line for line in s.server.output.splitlines() if re.search(r"(<-|->) ", line)]
    stamped = [line for line in packets if re.match(r"\[\d\d:\d\d:\d\d\.\d+\] (<-|->) ", line)]
    plain = [line for line in packets if re.match(r"(<-|->) ", line)]
    assert any(line.endswith("<- g") for line in stamped), packets  # remote-debug, as it starts
    assert any(line == "<- g" for line in plain), packets  # debug, after debug-format none
