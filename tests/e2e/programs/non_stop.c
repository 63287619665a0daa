/* Workers that keep working while gdb looks at another thread (non-stop mode): each calls
 * tick() and then tock() every millisecond until main's stop_flag is set. main stops at
 * all_started() once they run. */
#include "workers.h"
#include <pthread.h>
#include <stdio.h>
#include <unistd.h>

#define WORKERS 2

volatile long counters[WORKERS];
volatile int stop_flag;

void tick(long id) {
    calls++; /* MARK: tick (its first instruction, rip-relative, fits a fast jump) */
    counters[id]++;
}

void tock(long id) {
    counters[id] += 0; /* MARK: tock */
}

void all_started(void) {}

static void* worker(void* arg) {
    long id = (long)arg;
    while (!stop_flag) {
        tick(id);
        tock(id);
        usleep(1000);
    }
    return NULL;
}

int main(void) {
    pthread_t threads[WORKERS];
    start_workers(threads, WORKERS, worker);
    all_started();
    while (!stop_flag)
        usleep(1000);
    join_workers(threads, WORKERS);
    printf("counters %ld %ld\n", counters[0], counters[1]);
    return 0;
}
