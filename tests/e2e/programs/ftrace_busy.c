/* Inferior for "gdb never sees tpagent's code": two threads call work() in a tight loop
 * (a fast tracepoint there keeps them in its pad and collector much of the time), while
 * main stops at tick() TICKS times, a millisecond apart: each stop catches the workers
 * wherever they are. Each worker does ROUNDS calls; main prints their checksums, which no
 * tracing may change.
 * The MARK line starts with an instruction that reads a global (6 bytes), long enough for
 * a 5-byte jump. */
#include <pthread.h>
#include <stdio.h>
#include <unistd.h>

#include "workers.h"

#define WORKERS 2
#define ROUNDS 10000000
#define TICKS 40

long results[WORKERS];

long work(long id, long round) {
    calls++; /* MARK: busy_work */
    return mix(id * 1000 + round);
}

static void* worker(void* arg) {
    long id = (long)arg;
    long sum = 0;
    for (long round = 0; round < ROUNDS; round++)
        sum += work(id, round);
    results[id] = sum;
    return NULL;
}

void tick(int n) {
    (void)n;
}

int main(void) {
    pthread_t threads[WORKERS];
    start_workers(threads, WORKERS, worker);
    for (int n = 0; n < TICKS; n++) {
        usleep(1000);
        tick(n);
    }
    join_workers(threads, WORKERS);
    printf("results %ld %ld\n", results[0], results[1]);
    return 0;
}
