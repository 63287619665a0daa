/* Inferior for test_soak.py: THREADS threads (4 unless given, at most MAX_THREADS) each call
 * traced(thread, count) HITS times, count being the thread's own counter 0 .. HITS - 1, while main
 * calls checkpoint(k) for k = 1 .. CHECKPOINTS, a place for gdb's breakpoint: the k-th once every
 * thread has made at least k * HITS / (CHECKPOINTS + 1) calls, so every checkpoint falls while the
 * threads run. Once they are joined main calls finished(), prints "threads=T hits=H checksum=X" and
 * exits 0.
 *
 * The traced line is one 11-byte instruction (a lock add to a thread-local counter), long
 * enough for a fast tracepoint's jump, and it is what counts the calls: a thread stopped
 * anywhere, even in the tracepoint's pad, has counted exactly the calls that passed the
 * tracepoint. gdb reads the counters through calls_of[]; a thread that ends points its entry
 * at a copy in final_calls[] first (its thread-local memory goes with it).
 *
 * Usage: soak HITS CHECKPOINTS [THREADS] */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

#define MAX_THREADS 8

static int threads = 4;
static __thread long thread_calls;
long* calls_of[MAX_THREADS]; /* each thread's thread_calls */
long final_calls[MAX_THREADS];
static long hits;
static unsigned long sums[MAX_THREADS];
static pthread_barrier_t started;

long traced(long thread, long count) {
    __atomic_fetch_add(&thread_calls, 1, __ATOMIC_RELAXED); /* MARK: traced */
    return count * (thread + 1);
}

void checkpoint(long k) {
    (void)k;
}

void finished(void) {}

static void* worker(void* arg) {
    long thread = (long)arg;
    __atomic_store_n(&calls_of[thread], &thread_calls, __ATOMIC_RELEASE);
    pthread_barrier_wait(&started);
    unsigned long sum = 0;
    for (long count = 0; count < hits; count++)
        sum += traced(thread, count);
    sums[thread] = sum;
    final_calls[thread] = thread_calls;
    __atomic_store_n(&calls_of[thread], &final_calls[thread], __ATOMIC_RELEASE);
    return NULL;
}

static long fewest_calls(void) {
    long fewest = hits;
    for (int t = 0; t < threads; t++) {
        long n = __atomic_load_n(__atomic_load_n(&calls_of[t], __ATOMIC_ACQUIRE), __ATOMIC_RELAXED);
        if (n < fewest) fewest = n;
    }
    return fewest;
}

int main(int argc, char** argv) {
    if (argc != 3 && argc != 4) return 2;
    hits = atol(argv[1]);
    long checkpoints = atol(argv[2]);
    if (argc == 4) threads = atoi(argv[3]);
    if (threads < 1 || threads > MAX_THREADS) return 2;
    pthread_t workers[MAX_THREADS];
    pthread_barrier_init(&started, NULL, threads + 1);
    for (long t = 0; t < threads; t++)
        pthread_create(&workers[t], NULL, worker, (void*)t);
    pthread_barrier_wait(&started);
    for (long k = 1; k <= checkpoints; k++) {
        const long goal = k * hits / (checkpoints + 1);
        while (fewest_calls() < goal) {
            struct timespec nap = {0, 1000000};
            nanosleep(&nap, NULL);
        }
        checkpoint(k);
    }
    unsigned long checksum = 0;
    for (long t = 0; t < threads; t++) {
        pthread_join(workers[t], NULL);
        checksum += sums[t];
    }
    finished();
    printf("threads=%d hits=%ld checksum=%lu\n", threads, hits, checksum);
    return 0;
}
