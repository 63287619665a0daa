/* Hits a tracepoint that collects a large array each time, to fill a big trace buffer fast. */
#include <stdlib.h>

char block[60000];
volatile long sink;

__attribute__((noinline)) void fill(long i) {
    block[i % sizeof block] = (char)i;
    sink += i;
}

int main(int argc, char** argv) {
    long n = argc > 1 ? atol(argv[1]) : 2000;
    for (long i = 0; i < n; i++)
        fill(i);
    return 0; /* MARK: done */
}
