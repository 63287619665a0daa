"""The .deb CPack builds (cmake/install.cmake): what it holds, and a tpagent unpacked from it
that serves a fast-tracepoint session with a bare --inproc (the library found where the
package puts it, not beside tpagent). The package is built from the build tree under test
(TPAGENT_BUILD_DIR) into a scratch folder and unpacked with dpkg-deb, not installed."""

import os
import re
import subprocess
from pathlib import Path

import pytest

from harness import E2E, ServerBinary
from scenario import TO_MAIN, FastTrace, ftrace, trace_to

BUILD = os.environ.get("TPAGENT_BUILD_DIR")

pytestmark = [
    pytest.mark.tpagent_only("tpagent's package"),
    pytest.mark.skipif(not BUILD, reason="TPAGENT_BUILD_DIR names no build tree (ctest sets it)"),
]


@pytest.fixture(scope="module")
def unpacked(tmp_path_factory) -> tuple[Path, str]:
    """The package's root unpacked, and `dpkg-deb --info` of it."""
    out = tmp_path_factory.mktemp("deb")
    build = subprocess.run(["cpack", "-G", "DEB", "-B", str(out), "--config", f"{BUILD}/CPackConfig.cmake"],
                           capture_output=True, text=True, timeout=600)
    assert build.returncode == 0, build.stdout + build.stderr
    debs = list(out.glob("tpagent_*.deb"))
    assert len(debs) == 1, list(out.iterdir())
    root = out / "root"
    subprocess.run(["dpkg-deb", "-x", str(debs[0]), str(root)], check=True, timeout=120)
    info = subprocess.run(["dpkg-deb", "--info", str(debs[0])], capture_output=True, text=True, check=True).stdout
    return root, info


def test_package_holds_the_tools_library_and_man_pages(unpacked):
    root, info = unpacked
    assert re.search(r"^ Package: tpagent$", info, re.M), info
    assert re.search(r"^ Depends: .*libc6", info, re.M), info  # shlibdeps ran
    for path in ("usr/bin/tpagent", "usr/bin/tpdump", "usr/lib/tpagent/libtpagent-inproc.so",
                 "usr/share/man/man1/tpagent.1.gz", "usr/share/man/man1/tpdump.1.gz"):
        assert (root / path).is_file(), path
    version = subprocess.run([root / "usr/bin/tpagent", "--version"], capture_output=True, text=True, check=True)
    assert re.fullmatch(r"tpagent \d+\.\d+\.\d+\n", version.stdout), version.stdout
    version = subprocess.run([root / "usr/bin/tpdump", "--version"], capture_output=True, text=True, check=True)
    assert version.stdout.startswith("tpdump "), version.stdout
    page = subprocess.run(["gzip", "-dc", root / "usr/share/man/man1/tpagent.1.gz"], capture_output=True, text=True).stdout
    assert r"\-\-inproc" in page and "tracepoint agent" in page, page[:400]


def test_packaged_tpagent_finds_its_inproc_library(unpacked, programs, tmp_path):
    """`tpagent --inproc` from the package: fast tracepoints collect in the program."""
    root, _ = unpacked
    server = ServerBinary(path=str(root / "usr/bin/tpagent"), is_gdbserver=False)
    e2e = E2E(server, programs, tmp_path)
    try:
        s = FastTrace(e2e, "ftrace_loop", "5", agent=False, options=("--inproc",))
        define = s.define(ftrace("traced", "collect $rdi"))
        walk = s.walk("$rdi")
        r = s.gdb(*TO_MAIN, define, *trace_to("finished"), walk)
        assert [row[2] for row in r.frames(walk)] == [0, 1, 2, 3, 4], r.of(walk)
    finally:
        assert not e2e.close(), "processes left behind after SIGKILL"
