/* Inferior for many trace runs in one session: main runs ITERATIONS iterations; in each,
 * it calls plain(n), guarded(n) and tail(n) for n = i * 4 + k, k = 0..3, then
 * cycle_done(i): a place to stop between runs. Every call folds into a checksum; main
 * prints it and exits with checksum % 251, so a pad that ran stale code shows.
 *
 * Usage: ftrace_cycles [ITERATIONS]   (default 10)
 * Lines tagged "MARK: name" start with an instruction that reads a global (rip-relative,
 * 6 bytes), long enough for a 5-byte jump. */
#include <stdio.h>
#include <stdlib.h>

int plain_hits, guarded_hits, tail_hits, tail_late;

long plain(long n) {
    plain_hits++; /* MARK: plain_entry */
    return n * 3 + 1;
}

long guarded(long n) {
    guarded_hits++; /* MARK: guarded_entry */
    return n ^ 0x55;
}

long tail(long n) {
    tail_hits++; /* MARK: tail_entry */
    long v = n * n;
    tail_late++; /* MARK: tail_late */
    return v;
}

void cycle_done(int i) {
    (void)i;
}

int main(int argc, char** argv) {
    int iterations = argc > 1 ? atoi(argv[1]) : 10;
    long checksum = 0;
    for (int i = 0; i < iterations; i++) {
        for (long k = 0; k < 4; k++) {
            long n = i * 4 + k;
            long v = plain(n); /* one statement each: the calls' order is fixed */
            v += guarded(n);
            v += tail(n);
            checksum = checksum * 31 + v;
        }
        cycle_done(i);
    }
    printf("checksum=%ld plain=%d guarded=%d tail=%d\n", checksum, plain_hits, guarded_hits,
           tail_hits);
    return (int)(checksum % 251);
}
