/* Inferior for the fast tracepoint tests: calls lib_traced() of libftrace_lib.so
 * (ftrace_lib.c, found through the program's rpath) once per iteration, prints the sum
 * of the results and exits with it modulo 251.
 *
 * Usage: ftrace_shlib [ITERATIONS]   (default 10) */
#include <stdio.h>
#include <stdlib.h>

long lib_traced(long n);
extern int lib_hits;

void finished(long sum) {
    (void)sum;
}

int main(int argc, char** argv) {
    int iterations = argc > 1 ? atoi(argv[1]) : 10;
    long sum = 0;
    for (int i = 0; i < iterations; i++)
        sum += lib_traced(i * 10);
    finished(sum);
    printf("sum=%ld lib_hits=%d\n", sum, lib_hits);
    return (int)(sum % 251);
}
