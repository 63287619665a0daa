/* Inferior for the thread-pointer registers in fast frames: four threads each record their
 * own thread pointer (pthread_self(), which glibc keeps in fs_base on x86-64) in self_of[id],
 * set their thread-local tls_id, then call work(id, round) ROUNDS times together.
 * main calls all_done() after joining them. */
#include <pthread.h>
#include <stdio.h>

#include "workers.h"

#define NUM_THREADS 4
#define ROUNDS 5

unsigned long self_of[NUM_THREADS];
__thread long tls_id = -1;
long results[NUM_THREADS];

long work(long id, long round) {
    calls++; /* MARK: work_entry */
    if (!self_of[id]) self_of[id] = (unsigned long)pthread_self();
    tls_id = id;
    results[id] += mix(round) + tls_id;
    return results[id];
}

int main(void) {
    rounds_together(NUM_THREADS, ROUNDS, work);
    all_done(); /* MARK: all_done */
    printf("results %ld %ld %ld %ld\n", results[0], results[1], results[2], results[3]);
    return 0;
}
