/* Inferior for steps ended while another thread's event goes to gdb: two threads each bump
 * their own counter ROUNDS times on one line (a breakpoint there is hit by both, one stop of
 * each ending the other's step early). Exits with 0.
 *
 * Usage: step_races */
#include <pthread.h>

#define THREADS 2
#define ROUNDS 100000

static volatile int counters[THREADS];

static void* bump(void* arg) {
    volatile int* mine = arg;
    for (int i = 0; i < ROUNDS; i++)
        (*mine)++; /* MARK: bump */
    return NULL;
}

int main(void) {
    pthread_t threads[THREADS];
    for (int i = 0; i < THREADS; i++)
        pthread_create(&threads[i], NULL, bump, (void*)&counters[i]);
    for (int i = 0; i < THREADS; i++)
        pthread_join(threads[i], NULL);
    return 0;
}
