/* arm64 with SVE only: FP/SIMD and SVE registers in fast tracepoint frames. Sets fpcr's FZ
 * (bit 24, not the default), z15 to 1, 2, 3... in its 32-bit lanes and p3 to all-true for
 * words; then for i = 0 .. N-1 (argv[1], default 4) d14 = 100 + i and a hit at `vector_hit`
 * (a nop where the test puts its fast tracepoint). Nothing else touches those registers:
 * after the loop it checks they are as set (a pad must give them back) and prints
 * "calls=N z15=kept p3=kept fpcr=kept" ("changed" for any that is not). */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

static uint32_t z15_out[64]; /* up to the longest vector, 256 bytes */
static uint8_t p3_out[32];

void finished(void) {}

int main(int argc, char** argv) {
    long n = argc > 1 ? atol(argv[1]) : 4;
    uint64_t fpcr = 1u << 24, fpcr_out = 0, vl = 0;
    __asm__ volatile(".arch_extension sve\n\t"
                     "msr fpcr, %1\n\t"
                     "index z15.s, #1, #1\n\t"
                     "ptrue p3.s\n\t"
                     "rdvl %0, #1"
                     : "=r"(vl)
                     : "r"(fpcr)
                     : "v15", "memory");
    long i;
    for (i = 0; i < n; i++) {
        long v = 100 + i;
        __asm__ volatile("fmov d14, %0\n\t"
                         ".globl vector_hit\n"
                         "vector_hit:\n\t"
                         "nop"
                         :
                         : "r"(v)
                         : "v14");
    }
    __asm__ volatile(".arch_extension sve\n\t"
                     "str z15, [%1]\n\t"
                     "str p3, [%2]\n\t"
                     "mrs %0, fpcr"
                     : "=r"(fpcr_out)
                     : "r"(z15_out), "r"(p3_out)
                     : "memory");
    finished();
    int z15_kept = 1, p3_kept = 1;
    for (uint64_t lane = 0; lane < vl / 4; lane++)
        z15_kept = z15_kept && z15_out[lane] == lane + 1;
    for (uint64_t byte = 0; byte < vl / 8; byte++)
        p3_kept = p3_kept && p3_out[byte] == 0x11;
    printf("calls=%ld z15=%s p3=%s fpcr=%s\n", i, z15_kept ? "kept" : "changed",
           p3_kept ? "kept" : "changed", fpcr_out == fpcr ? "kept" : "changed");
    return 0;
}
