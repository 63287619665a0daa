"""Thread-local variables (qGetTLSAddr): `print` of a `__thread` variable and of errno, in each
thread, in a dynamically and a statically linked program, glibc's and musl's. tpagent finds them
without libthread_db, from the C library's own structures. Runs against both stubs (gdbserver,
with libthread_db, has none in a musl program)."""

import shutil

import pytest

from harness import assert_in_order, compile_program
from scenario import TO_MAIN, Scenario

PROGRAM = "tls_vars"
# Variant -> the compiler and its flags.
VARIANTS = {
    "glibc_dynamic": ("cc",),
    "glibc_static": ("cc", "-static"),
    "musl_dynamic": ("musl-gcc",),
    "musl_static": ("musl-gcc", "-static"),
}
MUSL_ON_GDBSERVER = pytest.mark.tpagent_only("gdbserver's libthread_db finds no TLS in a musl program")


@pytest.mark.parametrize("variant", [
    "glibc_dynamic", "glibc_static",
    pytest.param("musl_dynamic", marks=MUSL_ON_GDBSERVER),
    pytest.param("musl_static", marks=MUSL_ON_GDBSERVER),
])
def test_thread_local_variables(e2e, variant):
    compiler, *flags = VARIANTS[variant]
    if shutil.which(compiler) is None:
        pytest.skip(f"{compiler} is missing (Debian's musl-tools)")
    program = compile_program(e2e.programs.source(PROGRAM), e2e.tmp / f"{PROGRAM}_{variant}",
                              *flags, compiler=compiler)
    s = Scenario(e2e, PROGRAM, program=program)
    # errno: glibc's, a TLS variable of libc.so (gdb finds no such symbol in a static program,
    # with either stub; musl's is no variable).
    errno = ["print errno"] if variant == "glibc_dynamic" else []
    r = s.gdb(*TO_MAIN, "break stop_here", "continue", "print counter", "print name", *errno,
              "thread 2", "print counter", "print name", *errno, "kill")
    assert "Cannot find thread-local" not in r.transcript, r.transcript
    assert r.value("print counter") == "42"
    assert_in_order(r.of("print name"), r'= "main"')
    assert r.value("print counter", 1) == "7"
    assert_in_order(r.of("print name", 1), r'= "wain"')
    if errno:
        assert r.value("print errno") == "11"
        assert r.value("print errno", 1) == "33"


def test_no_libthread_db_along_the_search_path(e2e):
    """`monitor set libthread-db-search-path` to a folder with no libthread_db: qGetTLSAddr
    fails, as with gdbserver, whose thread-local storage comes from libthread_db (gdb's
    gdb.server/no-thread-db.exp); with tpagent, the default path again and it prints."""
    s = Scenario(e2e, PROGRAM)
    # Set at the start, as that test does: gdbserver loads libthread_db with the C library.
    r = s.gdb(f"monitor set libthread-db-search-path {e2e.tmp}", *TO_MAIN, "break stop_here", "continue",
              "print counter", "monitor set libthread-db-search-path", "print counter", "kill")
    assert_in_order(r.of("print counter"), r"Cannot find thread-local storage for Thread",
                    r"Remote target failed to process qGetTLSAddr request")
    # tpagent takes the default path back at once; gdbserver, having found no libthread_db
    # when the C library came, goes on without it.
    if not e2e.is_gdbserver:
        assert r.value("print counter", 1) == "42"
