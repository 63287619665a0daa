/* A program that maps zlib and SQLite and then waits: bench/ftrace_reach.py attaches to it and
   places fast tracepoints at the libraries' functions. Declared here, not from their headers,
   so that only the libraries themselves are needed. */
#include <signal.h>
#include <unistd.h>

const char* zlibVersion(void);
const char* sqlite3_libversion(void);

int main(void) {
    if (!zlibVersion() || !sqlite3_libversion()) return 1;
    write(1, "ready\n", 6);
    for (;;)
        pause();
}
