/* Inferior with threads: main plus three workers running two different functions.
 * Barriers keep every thread alive while the tests look at them. */
#include <pthread.h>
#include <stdio.h>

#define NUM_WORKERS 3

static pthread_barrier_t all_running; /* passed once every thread exists */
static pthread_barrier_t go;          /* passed once main has been looked at */
int results[NUM_WORKERS];

void all_threads_started(void) {}

void work_a(int id) {
    results[id] = id * 10;
}

void work_b(int id) {
    results[id] = id * 100;
}

static void* worker_a(void* arg) {
    pthread_barrier_wait(&all_running);
    pthread_barrier_wait(&go);
    work_a((int)(long)arg);
    return NULL;
}

static void* worker_b(void* arg) {
    pthread_barrier_wait(&all_running);
    pthread_barrier_wait(&go);
    work_b((int)(long)arg);
    return NULL;
}

int main(void) {
    pthread_t threads[NUM_WORKERS];
    pthread_barrier_init(&all_running, NULL, NUM_WORKERS + 1);
    pthread_barrier_init(&go, NULL, NUM_WORKERS + 1);
    for (long i = 0; i < NUM_WORKERS; i++)
        pthread_create(&threads[i], NULL, i == 0 ? worker_a : worker_b, (void*)i);
    pthread_barrier_wait(&all_running);
    all_threads_started();
    pthread_barrier_wait(&go);
    for (int i = 0; i < NUM_WORKERS; i++)
        pthread_join(threads[i], NULL);
    printf("results %d %d %d\n", results[0], results[1], results[2]);
    return results[0] == 0 && results[1] == 100 && results[2] == 200 ? 0 : 1;
}
