/* Inferior for the fast tracepoint tests: main calls traced(i, SCALE) and leaf(i) once
 * per iteration; every value they leave behind (globals, locals, a struct, a byte array)
 * follows from the iteration number, so a collected value tells which call a trace frame
 * holds. main folds the results into a checksum, prints it and exits with
 * checksum % 251: a program whose code or stack a fast tracepoint disturbed gets it wrong
 * (or crashes).
 *
 * traced() calls a function, so it has a stack frame below its locals; leaf() calls
 * nothing, so its locals live in the x86-64 red zone, below the stack pointer, where a
 * jump pad that pushes registers without stepping over the red zone overwrites them.
 *
 * Usage: ftrace_loop [ITERATIONS]   (default 10)
 * Lines tagged "MARK: name" are located by the tests; each starts with an instruction that
 * reads a global (rip-relative, 6 bytes), long enough for a 5-byte jump. */
#include <stdio.h>
#include <stdlib.h>

#define SCALE 3

struct record {
    int id;
    int square;
    char tag[8];
};

int hits;      /* calls of traced() so far */
int late_hits; /* the same, counted at the traced_late line */
int leaf_hits; /* calls of leaf() so far */
unsigned char bytes[16];
struct record current = {0, 0, "ftrace"};
int untouched = 77; /* never collected */
long result;        /* the checksum, once main has it */

long mix(long v) {
    return v ^ (v >> 3);
}

long traced(long n, long scale) {
    hits++; /* MARK: traced_entry */
    long squared = n * n;
    long product = mix(squared * scale);
    current.id = (int)n;
    current.square = (int)squared;
    for (int i = 0; i < 16; i++)
        bytes[i] = (unsigned char)(n * 16 + i);
    late_hits++; /* MARK: traced_late */
    return product + n;
}

long leaf(long n) {
    long doubled = n * 2;
    long tripled = n * 3;
    leaf_hits++; /* MARK: leaf_late */
    return doubled * 1000 + tripled;
}

/* Places to stop: main calls halfway() once ITERATIONS / 2 calls of traced() are done,
 * and finished() once the checksum is known. */
void halfway(void) {}
void finished(void) {}

int main(int argc, char** argv) {
    int iterations = argc > 1 ? atoi(argv[1]) : 10;
    long checksum = 0;
    for (int i = 0; i < iterations; i++) {
        if (i == iterations / 2) halfway();
        checksum = checksum * 31 + traced(i, SCALE) + leaf(i);
    }
    result = checksum;
    finished();
    printf("checksum=%ld hits=%d late_hits=%d leaf_hits=%d\n", checksum, hits, late_hits,
           leaf_hits);
    return (int)(checksum % 251);
}
