/* Inferior for the full-buffer tests: eight threads, released together by a barrier, each
 * call work(id, round) for round = 0 .. ROUNDS - 1, so a tracepoint in work() is hit by all
 * of them at once. Each thread counts its own calls in counts[id]: at the MARK line it
 * equals round, and a trace frame holding both tells which call of which thread it is.
 * main calls all_done() after joining them (a place to stop), then prints every thread's
 * count and the total: the program did all its work whatever the trace did.
 * Usage: faults_threads ROUNDS
 * The MARK line starts with an instruction that reads a global (6 bytes), long enough for
 * a fast tracepoint's 5-byte jump. */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>

#include "workers.h"

#define NUM_THREADS 8

long counts[NUM_THREADS];
long sums[NUM_THREADS];

long work(long id, long round) {
    calls++; /* MARK: work_entry */
    long value = mix(id * 100000 + round);
    sums[id] += value;
    counts[id]++;
    return value;
}

int main(int argc, char** argv) {
    long rounds = argc > 1 ? atol(argv[1]) : 100;
    rounds_together(NUM_THREADS, rounds, work);
    all_done(); /* MARK: all_done */
    long total = 0;
    printf("counts");
    for (int i = 0; i < NUM_THREADS; i++) {
        printf(" %ld", counts[i]);
        total += counts[i];
    }
    printf("\ntotal %ld\n", total);
    for (int i = 0; i < NUM_THREADS; i++)
        printf("sum %d %ld\n", i, sums[i]);
    return 0;
}
