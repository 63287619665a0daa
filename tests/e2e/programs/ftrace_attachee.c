/* Inferior for fast tracepoints in a process started without the in-process agent and
 * attached to: two workers call work() in a tight loop (hot in the traced function when
 * tpagent attaches), a reader thread waits in read() on a pipe and main sleeps in usleep()
 * (threads stopped inside system calls that must restart as they would have), until a
 * debugger sets stop_now. Then main writes to the pipe, joins everyone, checks each worker's
 * sum against work()'s results recomputed without calling it, and reports.
 * Usage: ftrace_attachee READY_FILE REPORT_FILE. READY_FILE appears once all threads run. */
#include <pthread.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "workers.h"

#define WORKERS 2

volatile int stop_now;
volatile long rounds_done[WORKERS];
long sums[WORKERS];
int pipe_fds[2];
char got[16];
long got_bytes = -1;

long work(long id, long round) {
    calls++; /* MARK: attach_work */
    return mix(id * 1000003 + round);
}

static void* worker(void* arg) {
    long id = (long)arg;
    long sum = 0;
    long round = 0;
    for (; !stop_now; round++)
        sum += work(id, round);
    sums[id] = sum;
    rounds_done[id] = round;
    return NULL;
}

static void* reader(void* arg) {
    (void)arg;
    got_bytes = read(pipe_fds[0], got, sizeof got - 1);
    return NULL;
}

void ticked(unsigned long n) {
    (void)n;
}

int main(int argc, char** argv) {
    if (argc != 3 || pipe(pipe_fds) != 0) return 2;
    pthread_t threads[WORKERS], reading;
    start_workers(threads, WORKERS, worker);
    pthread_create(&reading, NULL, reader, NULL);
    FILE* ready = fopen(argv[1], "w");
    if (ready == NULL) return 2;
    fclose(ready);
    unsigned long ticks = 0, broken_sleeps = 0;
    while (!stop_now) {
        if (++ticks > 6000) /* a minute: never outlive a broken test */
            stop_now = 1;
        if (usleep(10000) != 0) /* a stop must not break the sleep: it restarts */
            broken_sleeps++;
        ticked(ticks);
    }
    if (write(pipe_fds[1], "wake", 4) != 4) return 3;
    join_workers(threads, WORKERS);
    pthread_join(reading, NULL);
    int sums_ok = 1;
    for (long id = 0; id < WORKERS; id++) {
        long expect = 0;
        for (long round = 0; round < rounds_done[id]; round++)
            expect += mix(id * 1000003 + round);
        sums_ok = sums_ok && expect == sums[id] && rounds_done[id] > 0;
    }
    FILE* report = fopen(argv[2], "w");
    if (report == NULL) return 2;
    got[got_bytes > 0 ? got_bytes : 0] = 0;
    fprintf(report, "sums %s, reader got %ld bytes \"%s\", %lu sleeps broken, ticks %s\n",
            sums_ok ? "ok" : "WRONG", got_bytes, got, broken_sleeps,
            ticks > 6000 ? "ran out" : "ok");
    fclose(report);
    return ticks > 6000 ? 4 : 0;
}
