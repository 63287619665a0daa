/* Inferior for fast tracepoints in a library loaded during a trace: main runs ITERATIONS
 * rounds; at round ITERATIONS / 2 it dlopen()s LIBRARY (libftrace_lib.so, ftrace_lib.c) and
 * calls loaded(), and from then on calls the library's lib_traced(10 * i) each round. It
 * prints the sum of the results and exits with it modulo 251.
 *
 * Usage: ftrace_dlopen ITERATIONS LIBRARY */
#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>

void loaded(void) {}
void finished(void) {}

int main(int argc, char** argv) {
    if (argc < 3) return 2;
    const int iterations = atoi(argv[1]);
    long (*traced)(long) = NULL;
    long sum = 0;
    for (int i = 0; i < iterations; i++) {
        if (i == iterations / 2) {
            void* handle = dlopen(argv[2], RTLD_NOW);
            if (!handle || !(traced = (long (*)(long))dlsym(handle, "lib_traced"))) {
                fprintf(stderr, "%s\n", dlerror());
                return 3;
            }
            loaded();
        }
        if (traced) sum += traced(10 * i);
    }
    finished();
    printf("sum=%ld\n", sum);
    return (int)(sum % 251);
}
