/* arm64 only: sums called(i) for i < ITERATIONS through liba64_bti_lib.so (a64_bti_lib.c, whose
 * code is branch-target guarded where the CPU has BTI), prints the sum and exits with it % 251.
 *
 * Usage: a64_bti [ITERATIONS]   (default 5) */
#include <stdio.h>
#include <stdlib.h>

long sum_through(long n);
void finished(void) {}

int main(int argc, char** argv) {
    long sum = sum_through(argc > 1 ? atol(argv[1]) : 5);
    finished();
    printf("sum=%ld\n", sum);
    return (int)(sum % 251);
}
