/* Inferior for make_tracefiles.sh's threads.tf: two threads call tick() three times each,
   so each trace frame belongs to one of two threads. */
#include <pthread.h>
#include <stddef.h>

long total;

__attribute__((noinline)) long tick(long thread, long n) {
    return __atomic_add_fetch(&total, thread * 10 + n, __ATOMIC_RELAXED);
}

static void* worker(void* arg) {
    long thread = (long)arg;
    for (long n = 0; n < 3; n++)
        tick(thread, n);
    return NULL;
}

int main(void) {
    pthread_t threads[2];
    for (long i = 0; i < 2; i++)
        pthread_create(&threads[i], NULL, worker, (void*)(i + 1));
    for (int i = 0; i < 2; i++)
        pthread_join(threads[i], NULL);
    return 0;
}
