/* Inferior for repeated fast tracing with threads: ROUNDS rounds; in each, two new threads
 * call work(id, round * 100 + call) CALLS times each, and main, once both are joined,
 * calls round_done(round): a place to stop between rounds. main prints the two threads'
 * sums and exits with their total % 251.
 * work()'s first line (marked work_entry) starts with an instruction that reads a global
 * (rip-relative, 6 bytes), long enough for a 5-byte jump. */
#include <pthread.h>
#include <stdio.h>

#include "workers.h"

#define NUM_THREADS 2
#define ROUNDS 5
#define CALLS 20

int round_no;
long sums[NUM_THREADS];

long work(long id, long n) {
    calls++; /* MARK: work_entry */
    long value = mix(id * 100000 + n);
    sums[id] += value; /* each thread its own slot */
    return value;
}

static void* worker(void* arg) {
    long id = (long)arg;
    for (long call = 0; call < CALLS; call++)
        work(id, round_no * 100 + call);
    return NULL;
}

void round_done(int r) {
    (void)r;
}

int main(void) {
    for (round_no = 0; round_no < ROUNDS; round_no++) {
        pthread_t threads[NUM_THREADS];
        start_workers(threads, NUM_THREADS, worker);
        join_workers(threads, NUM_THREADS);
        round_done(round_no);
    }
    printf("sums %ld %ld\n", sums[0], sums[1]);
    return (int)((sums[0] + sums[1]) % 251);
}
