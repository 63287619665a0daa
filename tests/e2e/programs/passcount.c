/* Inferior for test_trace_passcount.py: a trace that stops itself from inside a hit (pass
 * count reached, linear buffer full) must leave the program running as it would without a
 * debugger. main calls traced(i) ITERATIONS times (in THREADS threads at once when asked);
 * traced() counts its calls in `hits`, adds i to `total`, fills `block` (a big array to
 * collect) from i and returns i * factor. main prints what it got and exits with 0 when
 * every value is right, 1 otherwise.
 *
 * The first statement of traced(), where "trace traced" goes, loads the int `factor`
 * rip-relative (8b 05 disp32): a thread resumed one byte into it runs "add $disp32, %eax"
 * instead, and its result is wrong.
 *
 * Usage: passcount [ITERATIONS [THREADS]]   (defaults 10, 1: main calls traced() itself)
 * Lines tagged "MARK: name" are located by the tests. */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>

int factor = 3;
int hits;   /* calls of traced() so far */
long total; /* the sum of their arguments */
unsigned char block[1024];
static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_barrier_t start;
static int iterations = 10;

long traced(long n) {
    int scale = factor; /* MARK: traced_entry */
    pthread_mutex_lock(&lock);
    hits++;
    total += n;
    for (int i = 0; i < (int)sizeof block; i++)
        block[i] = (unsigned char)(n + i);
    pthread_mutex_unlock(&lock);
    return n * scale;
}

static long run(void) {
    long sum = 0;
    for (int i = 0; i < iterations; i++)
        sum += traced(i);
    return sum;
}

static void* worker(void* arg) {
    (void)arg;
    pthread_barrier_wait(&start);
    return (void*)run();
}

void finished(void) {}

int main(int argc, char** argv) {
    if (argc > 1) iterations = atoi(argv[1]);
    int threads = argc > 2 ? atoi(argv[2]) : 1;
    long sum = 0;
    if (threads <= 1) {
        threads = 1;
        sum = run();
    } else {
        pthread_t ids[64];
        if (threads > 64) threads = 64;
        pthread_barrier_init(&start, NULL, (unsigned)threads);
        for (int i = 0; i < threads; i++)
            pthread_create(&ids[i], NULL, worker, NULL);
        for (int i = 0; i < threads; i++) {
            void* part = NULL;
            pthread_join(ids[i], &part);
            sum += (long)part;
        }
    }
    finished();
    long each = (long)iterations * (iterations - 1) / 2;
    int right =
        hits == threads * iterations && total == threads * each && sum == 3 * threads * each;
    printf("hits=%d total=%ld sum=%ld %s\n", hits, total, sum, right ? "right" : "WRONG");
    return right ? 0 : 1;
}
