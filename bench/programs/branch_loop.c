/* A branchy loop for the branch-trace benchmark: ITERATIONS calls of step(), which branches on
 * its argument; the loop times itself and finished() is where gdb stops to read the figures. */
#include <stdlib.h>
#include <time.h>

volatile long sink;
volatile long loop_ns;

__attribute__((noinline)) long step(long i) {
    if (i & 1) return i * 3;
    return i / 2;
}

__attribute__((noinline)) void finished(void) {
    sink = loop_ns;
}

int main(int argc, char** argv) {
    long iterations = argc > 1 ? atol(argv[1]) : 1000;
    struct timespec a, b;
    clock_gettime(CLOCK_MONOTONIC, &a);
    for (long i = 0; i < iterations; i++)
        sink += step(i);
    clock_gettime(CLOCK_MONOTONIC, &b);
    loop_ns = (b.tv_sec - a.tv_sec) * 1000000000L + (b.tv_nsec - a.tv_nsec);
    finished();
    return 0;
}
