/* Inferior for the load test (test_load_tracepoints.py): 1000 small functions f0000 ..
 * f0999, made by macros, each counting its calls and returning a value that follows from
 * its argument and its number. main runs ROUNDS rounds; round r calls, in order, every fK
 * with (K + r) % 4 != 0 (750 of them) with n = r * 1000 + K, then round_done(r, calls in
 * that round): a place to stop between trace runs. Every call folds into a checksum; main
 * prints it and exits with checksum % 251, so code not put back right shows.
 *
 * Each function's first statement, counts[K]++, starts with a load of a global
 * (rip-relative, 6 bytes), long enough for a fast tracepoint's 5-byte jump. The whole
 * function is on one source line (a macro), so the test places its tracepoints by address
 * (*fK+OFFSET, OFFSET found by disassembling f0000), not by line.
 *
 * Usage: load_many [ROUNDS]   (default 3) */
#include <stdio.h>
#include <stdlib.h>

#define FUNCTIONS 1000

int counts[FUNCTIONS]; /* calls of each function */
long calls;            /* calls of them all */

/* fNNNN (F100's prefix is two digits); 1NNNN - 10000 is NNNN in decimal (0NNN would be
 * octal). */
#define F(N)                                                                                       \
    __attribute__((noinline)) long f##N(long n) {                                                  \
        counts[1##N - 10000]++;                                                                    \
        calls++;                                                                                   \
        return n * 3 + (1##N - 10000);                                                             \
    }
// The tables of macro calls are laid out by hand: clang-format cannot settle on one layout.
// clang-format off
#define F10(P) F(P##0) F(P##1) F(P##2) F(P##3) F(P##4) F(P##5) F(P##6) F(P##7) F(P##8) F(P##9)
#define F100(P) F10(P##0) F10(P##1) F10(P##2) F10(P##3) F10(P##4) \
                F10(P##5) F10(P##6) F10(P##7) F10(P##8) F10(P##9)
F100(00) F100(01) F100(02) F100(03) F100(04) F100(05) F100(06) F100(07) F100(08) F100(09)

#define T(N) f##N,
#define T10(P) T(P##0) T(P##1) T(P##2) T(P##3) T(P##4) T(P##5) T(P##6) T(P##7) T(P##8) T(P##9)
#define T100(P) T10(P##0) T10(P##1) T10(P##2) T10(P##3) T10(P##4) \
                T10(P##5) T10(P##6) T10(P##7) T10(P##8) T10(P##9)
long (*const table[FUNCTIONS])(long) = {
    T100(00) T100(01) T100(02) T100(03) T100(04) T100(05) T100(06) T100(07) T100(08) T100(09)};
// clang-format on

/* A place to stop after round ROUND, which made MADE calls. */
__attribute__((noinline)) void round_done(int round, long made) {
    (void)round;
    (void)made;
}

int main(int argc, char** argv) {
    int rounds = argc > 1 ? atoi(argv[1]) : 3;
    long checksum = 0;
    for (int r = 0; r < rounds; r++) {
        long before = calls;
        for (int k = 0; k < FUNCTIONS; k++)
            if ((k + r) % 4 != 0) checksum = checksum * 31 + table[k]((long)r * 1000 + k);
        round_done(r, calls - before);
    }
    long total = 0;
    for (int k = 0; k < FUNCTIONS; k++)
        total += counts[k];
    printf("checksum=%ld calls=%ld counted=%ld\n", checksum, calls, total);
    return (int)(checksum % 251);
}
