// arm64 with SVE only: sets z5 to 1, 2, 3... in its 64-bit
// lanes, z6 to zero and p3 to all-true for words, then stops at `sve_stop` (gdb may change the
// registers there), stores z6 and p3 and prints z6's lanes 0 and 7 and p3's first byte.
#include <stdint.h>
#include <stdio.h>

static uint64_t z6_out[32]; // up to the longest vector, 256 bytes
static uint8_t p3_out[32];

int main(void) {
    __asm__ volatile(".arch_extension sve\n\t" // any -march: only this block needs SVE
                     "index z5.d, #1, #1\n\t"
                     "dup z6.d, #0\n\t"
                     "ptrue p3.s\n\t"
                     ".globl sve_stop\n"
                     "sve_stop:\n\t"
                     "nop\n\t"
                     "str z6, [%0]\n\t"
                     "str p3, [%1]\n\t"
                     :
                     : "r"(z6_out), "r"(p3_out)
                     : "v5", "v6", "memory");
    printf("z6.d[0]=%#llx z6.d[7]=%#llx p3[0]=%#x\n", (unsigned long long)z6_out[0],
           (unsigned long long)z6_out[7], p3_out[0]);
    return 0;
}
