"""Libraries in every link-map namespace (qXfer:libraries-svr4, glibc's r_debug chain): a
library dlmopen()ed into a new namespace, with the libc and loader it brings along, is in
gdb's `info sharedlibrary` next to the default namespace's. Runs against both stubs."""

import re

from harness import assert_in_order
from scenario import Scenario


def test_a_dlmopen_namespace_is_listed(e2e):
    s = Scenario(e2e, "namespaces")
    r = s.gdb("break stopped_here", "continue", "info sharedlibrary", "continue")
    s.server.wait_for(r"^loaded: yes$")
    libraries = r.of("info sharedlibrary")
    assert re.search(r"^0x[0-9a-f]+\s+0x[0-9a-f]+\s+Yes.*\S*/libm\.so\.6$", libraries, re.M), libraries
    # The default namespace's libc and loader, and the new namespace's copies.
    assert len(re.findall(r"/libc\.so\.6$", libraries, re.M)) == 2, libraries
    assert len(re.findall(r"/ld-linux-x86-64\.so\.2$", libraries, re.M)) == 2, libraries
    assert_in_order(r.of("continue", 1), r"\[Inferior 1 \(process \d+\) exited normally\]")
