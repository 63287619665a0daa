/* A hot function for breakpoints evaluated by the stub: main calls hot(n) for n = 0..N-1 (N
 * from argv[1], 1000 by default), in T threads (argv[2], 1 by default: main itself) each
 * taking its share of n; each call adds n to a total. Prints "total <sum>" and exits with 0.
 * gdb stops only where a condition holds: `break hot if n == K` stops once. */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>

static volatile long total;
static long calls;
static int threads = 1;
static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;

__attribute__((noinline)) void hot(long n) {
    pthread_mutex_lock(&lock); /* MARK: hot body */
    total += n;
    pthread_mutex_unlock(&lock);
}

static void* share(void* arg) {
    long first = (long)arg;
    for (long n = first; n < calls; n += threads)
        hot(n);
    return NULL;
}

int main(int argc, char** argv) {
    calls = argc > 1 ? atol(argv[1]) : 1000;
    threads = argc > 2 ? atoi(argv[2]) : 1;
    if (threads < 1 || threads > 16) return 2;
    pthread_t workers[16];
    for (long t = 1; t < threads; t++)
        pthread_create(&workers[t], NULL, share, (void*)t);
    share((void*)0);
    for (long t = 1; t < threads; t++)
        pthread_join(workers[t], NULL);
    printf("total %ld\n", total); /* MARK: end */
    return 0;
}
