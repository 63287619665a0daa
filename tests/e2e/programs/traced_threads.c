/* Inferior for the multi-threaded tracepoint tests: four threads, released together by a
 * barrier, each call work(id, round) ROUNDS times, so a tracepoint in work() is hit
 * concurrently. main calls all_done() after joining them: a place to stop. */
#include <pthread.h>
#include <stdio.h>

#include "workers.h"

#define NUM_THREADS 4
#define ROUNDS 5

int results[NUM_THREADS];

int work(int id, int round) {
    int value = id * 100 + round; /* MARK: work_body */
    __atomic_add_fetch(&results[id], value, __ATOMIC_RELAXED);
    return value;
}

static long call_work(long id, long round) {
    return work((int)id, (int)round);
}

int main(void) {
    rounds_together(NUM_THREADS, ROUNDS, call_work);
    all_done(); /* MARK: all_done */
    printf("results %d %d %d %d\n", results[0], results[1], results[2], results[3]);
    return 0;
}
