/* Inferior for fast tracepoints in threads that come and go: ROUNDS rounds of four threads,
 * each calling traced(n) once, n = round * 4 + i, and ending; main joins them, calls
 * finished() and exits with the sum of the n's seen % 251. A new thread often gets an ended
 * one's thread pointer (its C library reuses the memory).
 *
 * Usage: ftrace_thread_churn [ROUNDS]   (default 50) */
#include <pthread.h>
#include <stdlib.h>

int calls;
long seen;

long traced(long n) {
    __atomic_fetch_add(&calls, 1, __ATOMIC_RELAXED); /* MARK: traced_entry */
    __atomic_fetch_add(&seen, n, __ATOMIC_RELAXED);
    return n;
}

static void* one_call(void* arg) {
    traced((long)arg);
    return NULL;
}

void finished(void) {}

int main(int argc, char** argv) {
    int rounds = argc > 1 ? atoi(argv[1]) : 50;
    for (int round = 0; round < rounds; round++) {
        pthread_t threads[4];
        for (long i = 0; i < 4; i++)
            if (pthread_create(&threads[i], NULL, one_call, (void*)(round * 4 + i)) != 0) return 2;
        for (int i = 0; i < 4; i++)
            pthread_join(threads[i], NULL);
    }
    finished();
    return (int)(seen % 251);
}
