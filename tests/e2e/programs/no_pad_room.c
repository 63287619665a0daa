/* Inferior for the step-over tests: before main, it reserves (PROT_NONE, no memory behind it) every
 * free address within RESERVE of its own code, as a JIT or a sanitizer reserving address space
 * may, so tpagent finds no room for a trap tracepoint's pad there and steps over the
 * instruction in place instead. Then main calls traced(i) for i in 0..ITERATIONS-1 (in THREADS
 * threads at once when asked); traced() counts its calls, adds i to `total` and returns
 * i * factor. main prints what it got and exits with 0 when every value is right.
 *
 * Usage: no_pad_room [ITERATIONS [THREADS]]   (defaults 5, 1)
 * Lines tagged "MARK: name" are located by the tests. */
#define _GNU_SOURCE
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/mman.h>

#if defined(__x86_64__)
#define RESERVE (3ull << 30) /* pads must be within ±2 GiB */
#else
#define RESERVE (256ull << 20) /* AArch64: within ±128 MiB */
#endif

int factor = 3;
int hits;
long total;
static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static int iterations = 5;

long traced(long n) {
    long scaled = n * factor; /* MARK: traced_entry */
    pthread_mutex_lock(&lock);
    hits++;
    total += n;
    pthread_mutex_unlock(&lock);
    return scaled;
}

static void reserve(uintptr_t from, uintptr_t to) {
    if (to > from)
        mmap((void*)from, to - from, PROT_NONE,
             MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE | MAP_FIXED_NOREPLACE, -1, 0);
}

static int reserve_around(uintptr_t at) {
    static uintptr_t starts[1024], ends[1024];
    int n = 0;
    FILE* maps = fopen("/proc/self/maps", "r");
    if (!maps) return 0;
    unsigned long s, e;
    char line[512];
    while (n < 1024 && fgets(line, sizeof line, maps))
        if (sscanf(line, "%lx-%lx", &s, &e) == 2) starts[n] = s, ends[n++] = e;
    fclose(maps);
    at &= ~(uintptr_t)0xfff;
    const uintptr_t lo = at > RESERVE + 0x10000 ? at - RESERVE : 0x10000, hi = at + RESERVE;
    uintptr_t free_from = lo;
    for (int i = 0; i < n && free_from < hi; ++i) {
        if (ends[i] <= free_from) continue;
        reserve(free_from, starts[i] < hi ? starts[i] : hi);
        free_from = ends[i];
    }
    reserve(free_from, hi);
    return 1;
}

static int reserved;
__attribute__((constructor)) static void reserve_before_main(void) {
    reserved = reserve_around((uintptr_t)&traced);
}

static void* worker(void* arg) {
    long sum = 0;
    for (int i = 0; i < iterations; ++i)
        sum += traced(i);
    return (void*)sum;
}

int main(int argc, char** argv) {
    if (argc > 1) iterations = atoi(argv[1]);
    int threads = argc > 2 ? atoi(argv[2]) : 1;
    if (!reserved) return 2;
    long sum = 0;
    if (threads <= 1) {
        sum = (long)worker(NULL);
    } else {
        pthread_t t[16];
        if (threads > 16) threads = 16;
        for (int i = 0; i < threads; ++i)
            pthread_create(&t[i], NULL, worker, NULL);
        for (int i = 0; i < threads; ++i) {
            void* r;
            pthread_join(t[i], &r);
            sum += (long)r;
        }
    }
    const long n = iterations, runs = threads <= 1 ? 1 : threads;
    const int right =
        hits == n * runs && total == runs * n * (n - 1) / 2 && sum == 3 * runs * n * (n - 1) / 2;
    printf("hits=%d total=%ld sum=%ld %s\n", hits, total, sum, right ? "right" : "WRONG");
    return right ? 0 : 1; /* MARK: main_end */
}
