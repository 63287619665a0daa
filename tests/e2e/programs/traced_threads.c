/* Inferior for the multi-threaded tracepoint tests: four threads, released together by a
 * barrier, each call work(id, round) ROUNDS times, so a tracepoint in work() is hit
 * concurrently. main calls all_done() after joining them: a place to stop. */
#include <pthread.h>
#include <stdio.h>

#define NUM_THREADS 4
#define ROUNDS 5

static pthread_barrier_t start;
int results[NUM_THREADS];

int work(int id, int round) {
    int value = id * 100 + round; /* MARK: work_body */
    __atomic_add_fetch(&results[id], value, __ATOMIC_RELAXED);
    return value;
}

static void* worker(void* arg) {
    int id = (int)(long)arg;
    pthread_barrier_wait(&start);
    for (int round = 0; round < ROUNDS; round++)
        work(id, round);
    return NULL;
}

void all_done(void) {}

int main(void) {
    pthread_t threads[NUM_THREADS];
    pthread_barrier_init(&start, NULL, NUM_THREADS);
    for (long i = 0; i < NUM_THREADS; i++)
        pthread_create(&threads[i], NULL, worker, (void*)i);
    for (int i = 0; i < NUM_THREADS; i++)
        pthread_join(threads[i], NULL);
    all_done(); /* MARK: all_done */
    printf("results %d %d %d %d\n", results[0], results[1], results[2], results[3]);
    return 0;
}
