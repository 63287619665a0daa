/* Inferior for FP/vector registers in fast tracepoint frames (x86-64 with AVX): MXCSR set to
 * 0x9f80 (flush-to-zero on, not the default 0x1f80), ymm15's 32-bit lanes 1..8, then for
 * i = 0 .. N-1 (argv[1], default 4) xmm14's low quadword = 100 + i and hit(i). Nothing else
 * touches those registers; prints the calls made. */
#include <stdio.h>
#include <stdlib.h>

static const int lanes[8] = {1, 2, 3, 4, 5, 6, 7, 8};
volatile long calls;

__attribute__((noinline)) void hit(long i) {
    calls += i; /* MARK: hit_entry */
}

int main(int argc, char** argv) {
    long n = argc > 1 ? atol(argv[1]) : 4;
    unsigned mxcsr = 0x9f80;
    __asm__ volatile("ldmxcsr %0" : : "m"(mxcsr));
    __asm__ volatile("vmovdqu %0, %%ymm15" : : "m"(lanes) : "xmm15");
    for (long i = 0; i < n; i++) {
        long v = 100 + i;
        __asm__ volatile("movq %0, %%xmm14" : : "r"(v) : "xmm14");
        hit(i);
    }
    printf("%ld\n", calls);
    return 0;
}
