/* Fast-tracepoint benchmark: T threads call traced() in a loop for BASE_MS milliseconds
 * untraced (baseline), then, after ready() returns (gdb starts the trace there), for TRACED_MS
 * milliseconds, or, given HITS, until they have made HITS calls in all (HITS / T each) with
 * TRACED_MS as the longest it may take; done() is called after the traced loop. The untraced
 * loop is timed, not counted, so it lasts the same whatever a call costs. Calls and wall times
 * land in globals (gdb prints them at done) and on stdout.
 * Usage: ftrace_loop TRACED_MS [T [BASE_MS [HITS]]] (see `waiting` for attaching to it) */
#include <limits.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>
#include <unistd.h>

#define MAX_THREADS 16
#define BATCH 1024 /* calls between two looks at the clock */

char buf[64] = "collected by the $regs + 64 B row of bench/ftrace.py";
__thread long counter;    /* per thread: the threads share no cache line in traced() */
long base_calls, base_ns; /* read by gdb at done() */
long traced_calls, traced_ns;
static long deadline, quota, calls[MAX_THREADS][8]; /* one cache line per thread */
static pthread_barrier_t start, stop;
/* With FTRACE_LOOP_WAIT set, the program says "waiting" and waits for a debugger to attach and
 * clear this before it starts its threads (the "attached" column: no agent preloaded). */
volatile int waiting;

/* The fast tracepoint goes on the first instruction, `add %rdi,%fs:counter@tpoff` (9 bytes). */
__attribute__((noipa)) void traced(long n) {
    counter += n;
}

__attribute__((noipa)) void ready(void) {
    __asm__ volatile("");
}

__attribute__((noipa)) void done(void) {
    __asm__ volatile("");
}

static long now_ns(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec * 1000000000L + ts.tv_nsec;
}

static void* worker(void* arg) {
    long* count = arg;
    for (int pass = 0; pass < 2; pass++) {
        pthread_barrier_wait(&start);
        const long most = pass ? quota : LONG_MAX;
        long i = 0;
        do {
            for (int j = 0; j < BATCH && i < most; j++, i++)
                traced(i);
        } while (i < most && now_ns() < deadline);
        *count = i;
        pthread_barrier_wait(&stop);
    }
    return NULL;
}

/* One pass of ms milliseconds: release the workers, wait for all of them; wall time, calls. */
static long timed_pass(long ms, int threads, long* total) {
    long t0 = now_ns();
    deadline = t0 + ms * 1000000L;
    pthread_barrier_wait(&start);
    pthread_barrier_wait(&stop);
    long elapsed = now_ns() - t0;
    *total = 0;
    for (int t = 0; t < threads; t++)
        *total += calls[t][0];
    return elapsed;
}

int main(int argc, char** argv) {
    long traced_ms = argc > 1 ? atol(argv[1]) : 400;
    int threads = argc > 2 ? atoi(argv[2]) : 1;
    long base_ms = argc > 3 ? atol(argv[3]) : 100;
    long hits = argc > 4 ? atol(argv[4]) : 0;
    if (threads < 1 || threads > MAX_THREADS || hits < 0) return 2;
    quota = hits ? hits / threads : LONG_MAX;
    if (getenv("FTRACE_LOOP_WAIT")) {
        waiting = 1;
        puts("waiting");
        fflush(stdout);
        while (waiting)
            usleep(1000);
    }
    pthread_t tids[MAX_THREADS];
    pthread_barrier_init(&start, NULL, (unsigned)threads + 1);
    pthread_barrier_init(&stop, NULL, (unsigned)threads + 1);
    for (int t = 0; t < threads; t++)
        pthread_create(&tids[t], NULL, worker, calls[t]);
    base_ns = timed_pass(base_ms, threads, &base_calls);
    ready();
    traced_ns = timed_pass(traced_ms, threads, &traced_calls);
    done();
    for (int t = 0; t < threads; t++)
        pthread_join(tids[t], NULL);
    printf("base_calls=%ld base_ns=%ld traced_calls=%ld traced_ns=%ld\n", base_calls, base_ns,
           traced_calls, traced_ns);
    fflush(stdout);
    return 0;
}
