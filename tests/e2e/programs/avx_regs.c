/* Inferior for the AVX register tests (x86-64 with AVX only): loads 1, 2, ... 8 into ymm15's
 * 32-bit lanes, then calls hit(i) twice with ymm15 untouched, and prints the sum (3). */
#include <stdio.h>

static const int lanes[8] = {1, 2, 3, 4, 5, 6, 7, 8};

__attribute__((noinline)) int hit(int x) {
    return x + 1;
}

int main(void) {
    __asm__ volatile("vmovdqu %0, %%ymm15" : : "m"(lanes) : "xmm15");
    int sum = 0;
    for (int i = 0; i < 2; i++)
        sum += hit(i);
    printf("%d\n", sum);
    return 0;
}
