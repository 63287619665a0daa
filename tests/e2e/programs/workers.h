/* Shared by the threaded inferiors: mix(); starting and joining worker threads; rounds of
 * calls made by threads released together, and all_done(), a place to stop after them.
 * Each program keeps its own work() (a MARK line in it reads a global of its own). */
#ifndef E2E_WORKERS_H
#define E2E_WORKERS_H

#include <pthread.h>

/* Counted by work() at its MARK line, whose first instruction reads it (rip-relative, 6
 * bytes: long enough for a fast tracepoint's 5-byte jump). Racy between the threads: only
 * its memory is read, never its value. */
int calls;

static long mix(long v) {
    return v ^ (v >> 3);
}

/* THREADS[i] runs FN((void*)i), for i = 0 .. COUNT - 1. */
static void start_workers(pthread_t* threads, long count, void* (*fn)(void*)) {
    for (long i = 0; i < count; i++)
        pthread_create(&threads[i], NULL, fn, (void*)i);
}

/* Waits for THREADS[0 .. COUNT - 1] to end. */
static void join_workers(pthread_t* threads, long count) {
    for (long i = 0; i < count; i++)
        pthread_join(threads[i], NULL);
}

static pthread_barrier_t together;
static long together_rounds;
static long (*together_call)(long id, long round);

static void* call_rounds(void* arg) {
    long id = (long)arg;
    pthread_barrier_wait(&together);
    for (long round = 0; round < together_rounds; round++)
        together_call(id, round);
    return NULL;
}

/* COUNT threads, released together by a barrier, each call CALL(id, round) for
 * round = 0 .. ROUNDS - 1 (id = 0 .. COUNT - 1); returns once they have all ended. */
static void rounds_together(long count, long rounds, long (*call)(long id, long round)) {
    pthread_t threads[count];
    together_rounds = rounds;
    together_call = call;
    pthread_barrier_init(&together, NULL, (unsigned)count);
    start_workers(threads, count, call_rounds);
    join_workers(threads, count);
}

/* A place to stop once rounds_together() is done. */
void all_done(void) {}

#endif
