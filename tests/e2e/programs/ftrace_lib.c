/* Shared library for the fast tracepoint tests (built -fPIC -shared as libftrace_lib.so):
 * lib_traced() is called by ftrace_shlib.c once per iteration. The MARK line starts with an
 * instruction that reads a global (6 bytes), long enough for a 5-byte jump. */

int lib_hits;       /* calls of lib_traced() so far */
long lib_last = -1; /* lib_traced()'s last argument */

long lib_traced(long n) {
    lib_hits++; /* MARK: lib_entry */
    lib_last = n;
    return n * n + 7;
}
