/* Four threads released together (a barrier) call hit(id) in each of argv[1] rounds (20 by
 * default), so several reach its breakpoint at once and all but one hit wait behind the one
 * gdb hears of. Each thread's my_id (thread-local) is the id it passes. Prints "rounds N". */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>

#define THREADS 4

static __thread long my_id;
static long rounds = 20;
static pthread_barrier_t together;
static volatile long sum;

__attribute__((noinline)) void hit(long id) {
    sum += id;
}

static void* run(void* arg) {
    my_id = (long)arg;
    for (long round = 0; round < rounds; round++) {
        pthread_barrier_wait(&together);
        hit(my_id);
    }
    return NULL;
}

int main(int argc, char** argv) {
    rounds = argc > 1 ? atol(argv[1]) : 20;
    pthread_barrier_init(&together, NULL, THREADS);
    pthread_t threads[THREADS];
    for (long t = 0; t < THREADS; t++)
        pthread_create(&threads[t], NULL, run, (void*)(t + 1));
    for (long t = 0; t < THREADS; t++)
        pthread_join(threads[t], NULL);
    printf("rounds %ld\n", rounds);
    return 0;
}
