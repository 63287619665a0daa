/* Inferior for the static tracepoint tests: SystemTap SDT markers (<sys/sdt.h>).
 *
 * main calls step(i) for i = 0 .. ITERATIONS-1. step() has the marker tpagent_test:step with
 * the arguments i (int), i * 1234567890123 (long), &total (a pointer), the global `counter` (a
 * memory operand naming a symbol) and the constant 7; and tpagent_test:guarded, which fires
 * only while its semaphore is raised (counted in guarded_fired). Then, with LIBRARY given, it
 * dlopen()s it (libsdt_lib.so, sdt_lib.c) and calls its lib_step(i) ITERATIONS times. The
 * program links libstdc++, whose markers (libstdcxx:throw...) are in any C++ program.
 * Prints "total=T guarded=G lib=L" and exits with 0.
 *
 * Usage: sdt_markers [ITERATIONS] [LIBRARY] */
#define _SDT_HAS_SEMAPHORES 1
#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/sdt.h>

/* Every probe of a file built with semaphores has one, in the .probes section. */
unsigned short tpagent_test_step_semaphore __attribute__((unused, section(".probes")));
unsigned short tpagent_test_guarded_semaphore __attribute__((unused, section(".probes")));

long total;
int counter;
int guarded_fired;

void step(int i) {
    long big = (long)i * 1234567890123L;
    counter += 2;
    total += i;
    STAP_PROBE5(tpagent_test, step, i, big, &total, counter, 7); /* MARK: step */
    if (tpagent_test_guarded_semaphore) {
        guarded_fired++;
        STAP_PROBE1(tpagent_test, guarded, i);
    }
}

void finished(void) {}

int main(int argc, char** argv) {
    int iterations = argc > 1 ? atoi(argv[1]) : 5;
    int lib = 0;
    for (int i = 0; i < iterations; i++)
        step(i);
    if (argc > 2) {
        void* handle = dlopen(argv[2], RTLD_NOW);
        if (!handle) {
            fprintf(stderr, "%s\n", dlerror());
            return 1;
        }
        int (*lib_step)(int) = (int (*)(int))dlsym(handle, "lib_step");
        for (int i = 0; i < iterations; i++)
            lib += lib_step(i);
    }
    finished();
    printf("total=%ld guarded=%d lib=%d\n", total, guarded_fired, lib);
    return 0;
}
