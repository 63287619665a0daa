/* Calls traced_function N times and prints the nanoseconds the loop took, so a tracepoint's
 * cost per hit is (traced time - untraced time) / N. */
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

volatile long sink;

__attribute__((noinline)) void traced_function(long i) {
    sink += i;
}

static long now_ns(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec * 1000000000L + ts.tv_nsec;
}

int main(int argc, char** argv) {
    long n = argc > 1 ? atol(argv[1]) : 1000;
    long start = now_ns();
    for (long i = 0; i < n; i++)
        traced_function(i);
    long elapsed = now_ns() - start;
    printf("loop_ns=%ld\n", elapsed); /* MARK: done */
    fflush(stdout);
    return 0;
}
