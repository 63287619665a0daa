/* Inferior for the multi-threaded fast tracepoint test: four threads, released together
 * by a barrier, each call work(id, round) ROUNDS times, so a fast tracepoint in work() is
 * hit concurrently. main calls all_done() after joining them: a place to stop.
 * Usage: ftrace_threads [PAUSE_US]: each call of work() then sleeps that long after its MARK
 * line, so the threads' hits interleave in time.
 * The MARK line starts with an instruction that reads a global (6 bytes), long enough
 * for a 5-byte jump; work() calls a function, so its locals are above the stack pointer. */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

#include "workers.h"

#define NUM_THREADS 4
#define ROUNDS 50

long results[NUM_THREADS];
static unsigned pause_us;

long work(long id, long round) {
    calls++; /* MARK: work_entry */
    if (pause_us) usleep(pause_us);
    long value = mix(id * 1000 + round);
    __atomic_add_fetch(&results[id], value, __ATOMIC_RELAXED);
    return value;
}

int main(int argc, char** argv) {
    pause_us = argc > 1 ? (unsigned)atoi(argv[1]) : 0;
    rounds_together(NUM_THREADS, ROUNDS, work);
    all_done(); /* MARK: all_done */
    printf("results %ld %ld %ld %ld\n", results[0], results[1], results[2], results[3]);
    return 0;
}
