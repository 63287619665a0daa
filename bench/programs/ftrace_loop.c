/* Fast-tracepoint benchmark: T threads call traced() in a loop for BASE_MS milliseconds
 * untraced (baseline), then, after ready() returns (gdb starts the trace there), for TRACED_MS
 * milliseconds, or, given HITS, until they have made HITS calls in all (HITS / T each) with
 * TRACED_MS as the longest it may take; done() is called after the traced loop. The untraced
 * loop is timed, not counted, so it lasts the same whatever a call costs. Calls and wall times
 * land in globals (gdb prints them at done) and on stdout.
 * Given GAP_NS, every call of traced(), in both loops, is followed by a busy wait of about
 * GAP_NS nanoseconds (a spin calibrated once at start), which throttles the hit rate so that a
 * recording can keep up; with GAP_NS 0 (the default) the loops are as without it.
 * With FTRACE_LOOP_HANDSHAKE set, the program prints "ready" after ready() and waits for a line
 * on stdin before the traced loop, then "traced" after done() and waits for another line before
 * it prints its result: a driver can start and stop a recording right around the traced loop.
 * Built with -DFTRACE_LOOP_LTTNG (see ftrace_loop_lttng.h), traced() also fires the LTTng-UST
 * tracepoint tpagent_bench:hit (18 longs + 64 B of buf), for bench/lttng_anchor.py.
 * Usage: ftrace_loop TRACED_MS [T [BASE_MS [HITS [GAP_NS]]]] (see `waiting` for attaching to
 * it) */
#include <limits.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>
#include <unistd.h>

#ifdef FTRACE_LOOP_LTTNG
#define TRACEPOINT_DEFINE
#define TRACEPOINT_CREATE_PROBES
#include "ftrace_loop_lttng.h"
#endif

#define MAX_THREADS 16
#define BATCH 1024 /* calls between two looks at the clock */

char buf[64] = "collected by the $regs + 64 B row of bench/ftrace.py";
__thread long counter;    /* per thread: the threads share no cache line in traced() */
long base_calls, base_ns; /* read by gdb at done() */
long traced_calls, traced_ns;
/* The same passes in the threads' CPU time, summed: what a hit costs the thread itself, without
 * the time the CPU went to others (tpagent writing a recording, on a machine of few cores). */
long base_cpu_ns, traced_cpu_ns;
static long deadline, quota, calls[MAX_THREADS][8]; /* one cache line per thread */
static pthread_barrier_t start, stop;
/* With GAP_NS: spin() iterations of about GAP_NS ns, calls between two looks at the clock. */
static long spins;
static int gap_batch = BATCH;
/* With FTRACE_LOOP_WAIT set, the program says "waiting" and waits for a debugger to attach and
 * clear this before it starts its threads (the "attached" column: no agent preloaded). */
volatile int waiting;

/* The fast tracepoint goes on the first instruction, `add %rdi,%fs:counter@tpoff` (9 bytes)
 * (not with -DFTRACE_LOOP_LTTNG). */
__attribute__((noipa)) void traced(long n) {
    counter += n;
#ifdef FTRACE_LOOP_LTTNG
    tracepoint(tpagent_bench, hit, n, counter, buf);
#endif
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

/* Busy wait: k iterations of a loop the compiler must keep, about 1 cycle each. */
static inline void spin(long k) {
    for (; k > 0; k--)
        __asm__ volatile("" : "+r"(k));
}

/* spin() iterations that take about gap_ns: the fastest of 3 spins of >= 5 ms, scaled. */
static long calibrate(long gap_ns) {
    long k = 1L << 16, t;
    for (;;) {
        long t0 = now_ns();
        spin(k);
        if ((t = now_ns() - t0) >= 5000000L) break;
        k *= 2;
    }
    for (int r = 0; r < 3; r++) {
        long t0 = now_ns();
        spin(k);
        long e = now_ns() - t0;
        if (e < t) t = e;
    }
    long n = (long)((double)gap_ns * (double)k / (double)t + 0.5);
    return n > 0 ? n : 1;
}

static long thread_cpu_ns(void) {
    struct timespec ts;
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
    return ts.tv_sec * 1000000000L + ts.tv_nsec;
}

static void* worker(void* arg) {
    long* count = arg;
    for (int pass = 0; pass < 2; pass++) {
        pthread_barrier_wait(&start);
        const long cpu0 = thread_cpu_ns();
        const long most = pass ? quota : LONG_MAX;
        long i = 0;
        if (spins) {
            const long k = spins;
            const int batch = gap_batch;
            do {
                for (int j = 0; j < batch && i < most; j++, i++) {
                    traced(i);
                    spin(k);
                }
            } while (i < most && now_ns() < deadline);
        } else {
            do {
                for (int j = 0; j < BATCH && i < most; j++, i++)
                    traced(i);
            } while (i < most && now_ns() < deadline);
        }
        *count = i;
        __atomic_fetch_add(pass ? &traced_cpu_ns : &base_cpu_ns, thread_cpu_ns() - cpu0,
                           __ATOMIC_RELAXED);
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

/* FTRACE_LOOP_HANDSHAKE: say `what`, wait for a line on stdin (or its end). */
static void handshake(const char* what) {
    char line[64];
    puts(what);
    fflush(stdout);
    if (!fgets(line, sizeof line, stdin)) clearerr(stdin);
}

int main(int argc, char** argv) {
    long traced_ms = argc > 1 ? atol(argv[1]) : 400;
    int threads = argc > 2 ? atoi(argv[2]) : 1;
    long base_ms = argc > 3 ? atol(argv[3]) : 100;
    long hits = argc > 4 ? atol(argv[4]) : 0;
    long gap_ns = argc > 5 ? atol(argv[5]) : 0;
    if (threads < 1 || threads > MAX_THREADS || hits < 0 || gap_ns < 0) return 2;
    quota = hits ? hits / threads : LONG_MAX;
    if (gap_ns) {
        spins = calibrate(gap_ns);
        long b = 1000000L / gap_ns; /* a look at the clock at least every ~1 ms */
        gap_batch = b < 1 ? 1 : b > BATCH ? BATCH : (int)b;
    }
    const int handshaking = getenv("FTRACE_LOOP_HANDSHAKE") != NULL;
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
    if (handshaking) handshake("ready");
    traced_ns = timed_pass(traced_ms, threads, &traced_calls);
    done();
    if (handshaking) handshake("traced");
    for (int t = 0; t < threads; t++)
        pthread_join(tids[t], NULL);
    printf("base_calls=%ld base_ns=%ld traced_calls=%ld traced_ns=%ld base_cpu_ns=%ld "
           "traced_cpu_ns=%ld\n",
           base_calls, base_ns, traced_calls, traced_ns, base_cpu_ns, traced_cpu_ns);
    fflush(stdout);
    return 0;
}
