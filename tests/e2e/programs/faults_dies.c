/* Inferior that dies mid-trace: record_hit(i) for i = 0 .. HITS - 1, then, with its
 * tracepoints still in place, it ends as HOW says:
 *   segv  a write through a null pointer (SIGSEGV);
 *   exit  exit(EXIT_CODE) from inside the loop, without returning from main.
 * A loop round after that would hit the tracepoint again: none comes.
 * Usage: faults_dies HITS HOW
 * The MARK line starts with an instruction that reads a global (6 bytes), long enough for
 * a fast tracepoint's 5-byte jump. At it, hits == iteration and last_square is the
 * previous hit's square. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>

#define EXIT_CODE 3

int hits; /* record_hit calls so far */
long last_square;

static long square(long v) {
    return v * v;
}

/* Calls a function: its locals are above the stack pointer, out of a jump pad's way. */
long record_hit(int iteration) {
    hits++; /* MARK: record_entry */
    last_square = square(iteration);
    return last_square;
}

static void die(const char* how) {
    printf("dying (%s) after %d hits, last_square=%ld\n", how, hits, last_square);
    fflush(stdout);
    if (strcmp(how, "segv") == 0) {
        struct rlimit no_core = {0, 0}; /* no core file left behind, wherever it runs */
        setrlimit(RLIMIT_CORE, &no_core);
        volatile int* null_pointer = NULL;
        *null_pointer = hits; /* MARK: segv */
    }
    exit(EXIT_CODE);
}

int main(int argc, char** argv) {
    if (argc != 3) return 2;
    int count = atoi(argv[1]);
    long total = 0;
    for (int i = 0;; i++) {
        if (i == count) die(argv[2]);
        total += record_hit(i);
    }
    return (int)total; /* never reached */
}
