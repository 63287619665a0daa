/* Threads that come and go while gdb stops the program: each round starts four threads that
 * spin for a varying while and exit, calls checkpoint() and joins them. At a checkpoint some
 * of them are still running and some exit while gdb is stopping them (QThreadEvents). */
#include <pthread.h>
#include <stdio.h>

#define ROUNDS 300

volatile long checks;

static void* short_lived(void* arg) {
    for (volatile long i = 0; i < (long)arg; i++) {
    }
    return NULL;
}

void checkpoint(void) {
    checks++;
}

int main(void) {
    unsigned seed = 1;
    long spawned = 0;
    for (int round = 0; round < ROUNDS; round++) {
        pthread_t threads[4];
        for (int i = 0; i < 4; i++) {
            seed = seed * 1103515245 + 12345;
            long spins = (long)((seed >> 16) % 64) * 20000;
            if (pthread_create(&threads[i], NULL, short_lived, (void*)spins) == 0) spawned++;
        }
        checkpoint();
        for (int i = 0; i < 4; i++)
            pthread_join(threads[i], NULL);
    }
    printf("checks %ld spawned %ld\n", checks, spawned);
    return 0;
}
