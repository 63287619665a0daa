"""--attach: debug a process that is already running, then let it go."""

import re

from harness import assert_in_order

PROGRAM = "attachee"


def test_attach_print_set_detach(e2e):
    program = e2e.program(PROGRAM)
    ready, report = e2e.tmp / "ready", e2e.tmp / "report"
    target = e2e.spawn(str(program), str(ready), str(report))
    e2e.wait_for_file(ready)  # it is in its loop, not in the dynamic loader

    server = e2e.serve_attach(target.pid)
    r = e2e.gdb(
        server.remote,
        "print magic",
        "print loops > 0",
        "set var magic = 99",
        "set var stop_now = 1",
        "detach",
        program=program,
    )
    assert r.of("print magic").strip() == "$1 = 4660"
    assert r.of("print loops > 0").strip() == "$2 = 1"
    assert_in_order(r.of("detach"), rf"\[Inferior 1 \(process {target.pid}\) detached\]")

    # Detached, the process runs on, sees stop_now and leaves normally with our magic.
    assert target.wait(timeout=20) == 0
    assert re.fullmatch(r"stopped after \d+ loops, magic=99\n", report.read_text())
    # Nothing left to debug: the server ends.
    assert server.wait_exit() == 0


def test_attach_then_continue_to_exit(e2e):
    """After attaching, gdb owns the process: resume it and watch it exit."""
    program = e2e.program(PROGRAM)
    ready, report = e2e.tmp / "ready", e2e.tmp / "report"
    target = e2e.spawn(str(program), str(ready), str(report))
    e2e.wait_for_file(ready)

    server = e2e.serve_attach(target.pid)
    r = e2e.gdb(server.remote, "set var stop_now = 1", "continue", program=program)
    assert_in_order(r.of("continue"), rf"\[Inferior 1 \(process {target.pid}\) exited normally\]")
    assert report.read_text().endswith("magic=4660\n")
    assert server.wait_exit() == 0
