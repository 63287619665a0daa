/* arm64 with SME only: fast tracepoint hits in SME's streaming mode, where FFR cannot be read.
 * For i = 0 .. N-1 (argv[1], default 3) it enters streaming mode, sets fpcr's FZ (bit 24),
 * reaches `streaming_hit` (a nop where the test puts its fast tracepoint), reads fpcr back
 * and leaves streaming mode; prints "calls=N fpcr=kept" ("changed" if fpcr was not as set). */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

void finished(void) {}

int main(int argc, char** argv) {
    long n = argc > 1 ? atol(argv[1]) : 3;
    const uint64_t fpcr = 1u << 24;
    int kept = 1;
    long i;
    for (i = 0; i < n; i++) {
        uint64_t out = 0;
        __asm__ volatile(".arch_extension sme\n\t"
                         "smstart sm\n\t"
                         "msr fpcr, %1\n\t"
                         ".globl streaming_hit\n"
                         "streaming_hit:\n\t"
                         "nop\n\t"
                         "mrs %0, fpcr\n\t"
                         "smstop sm"
                         : "=r"(out)
                         : "r"(fpcr)
                         : "memory", "v0", "v1", "v2", "v3", "v4", "v5", "v6", "v7", "v8", "v9",
                           "v10", "v11", "v12", "v13", "v14", "v15", "v16", "v17", "v18", "v19",
                           "v20", "v21", "v22", "v23", "v24", "v25", "v26", "v27", "v28", "v29",
                           "v30", "v31");
        kept = kept && out == fpcr;
    }
    finished();
    printf("calls=%ld fpcr=%s\n", i, kept ? "kept" : "changed");
    return 0;
}
