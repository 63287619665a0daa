/* Inferior for the fault tests that kill or cut off gdb during a trace: it hits a tracepoint at
 * a steady pace, each hit numbered, so that the trace frames tell whether one was lost or
 * recorded twice.
 *
 * Usage: faults_pace STOP_FILE [PACE_US]
 *   calls pace_hit(n) for n = 0, 1, 2, ... (pace_last = n just before), one every PACE_US
 *   microseconds (default 10000), until STOP_FILE exists; then pace_end(hits) and prints
 *   "hits=N", N the number of pace_hit calls.
 * Lines tagged "MARK: name" are located by the tests. */
#include <stdio.h>
#include <stdlib.h>
#include <time.h>
#include <unistd.h>

volatile long pace_last = -1; /* the number of the hit under way: a tracepoint collects it */
long pace_sum;

void pace_hit(long n) {
    pace_sum += n; /* MARK: pace_hit */
}

void pace_end(long hits) {
    pace_sum += hits; /* MARK: pace_end */
}

int main(int argc, char** argv) {
    if (argc < 2) {
        fprintf(stderr, "usage: faults_pace STOP_FILE [PACE_US]\n");
        return 2;
    }
    long pace_us = argc > 2 ? atol(argv[2]) : 10000;
    struct timespec pace = {pace_us / 1000000, (pace_us % 1000000) * 1000};
    long n = 0;
    while (access(argv[1], F_OK) != 0) {
        pace_last = n;
        pace_hit(n);
        n++;
        nanosleep(&pace, NULL);
    }
    pace_end(n);
    printf("hits=%ld\n", n);
    return 0;
}
