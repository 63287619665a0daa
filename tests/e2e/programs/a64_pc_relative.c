/* arm64 only: every class of pc-relative instruction tpagent rebuilds in a pad, each at a
 * global label (at_cbz, at_ldr_q, ...) where a test puts a tracepoint, in classes(n), which
 * folds what each instruction did into its result: a branch that went the wrong way or a
 * literal loaded from the wrong place changes the sum main prints (and exits with, % 251).
 * The branches go both ways over the iterations (n odd/even, bit 1, zero or not).
 *
 * Usage: a64_pc_relative [ITERATIONS]   (default 8) */
#include <stdio.h>
#include <stdlib.h>

long classes(long n);
long called(long v) {
    return v * 7;
}
void finished(void) {}

__asm__(".text\n"
        ".global classes\n"
        ".type classes, %function\n"
        "classes:\n"
        "  stp x29, x30, [sp, #-16]!\n"
        "  mov x29, sp\n"
        "  mov x9, x0\n"
        "  mov x10, #0\n"
        ".global at_cbz\n"
        "at_cbz: cbz x9, 1f\n"
        "  add x10, x10, #1\n"
        "1:\n"
        ".global at_cbnz\n"
        "at_cbnz: cbnz w9, 2f\n"
        "  add x10, x10, #2\n"
        "2:\n"
        ".global at_tbz\n"
        "at_tbz: tbz x9, #0, 3f\n"
        "  add x10, x10, #4\n"
        "3:\n"
        ".global at_tbnz\n"
        "at_tbnz: tbnz w9, #1, 4f\n"
        "  add x10, x10, #8\n"
        "4:\n"
        "  cmp x9, #3\n"
        ".global at_b_cond\n"
        "at_b_cond: b.lt 5f\n"
        "  add x10, x10, #16\n"
        "5:\n"
        ".global at_ldrsw\n"
        "at_ldrsw: ldrsw x11, lit_word\n"
        "  add x10, x10, x11\n"
        ".global at_ldr_w\n"
        "at_ldr_w: ldr w11, lit_word\n"
        "  add x10, x10, x11, lsr #28\n"
        ".global at_ldr_x\n"
        "at_ldr_x: ldr x11, lit_double\n"
        "  add x10, x10, x11\n"
        ".global at_ldr_s\n"
        "at_ldr_s: ldr s2, lit_word\n"
        "  fmov w12, s2\n"
        "  add x10, x10, x12, lsr #24\n"
        ".global at_ldr_d\n"
        "at_ldr_d: ldr d0, lit_double\n"
        "  fmov x12, d0\n"
        "  add x10, x10, x12\n"
        ".global at_ldr_q\n"
        "at_ldr_q: ldr q1, lit_quad\n"
        "  mov x12, v1.d[1]\n"
        "  add x10, x10, x12\n"
        ".global at_prfm\n"
        "at_prfm: prfm pldl1keep, lit_word\n"
        ".global at_adr\n"
        "at_adr: adr x13, lit_quad\n"
        "  ldr x12, [x13]\n"
        "  add x10, x10, x12\n"
        ".global at_adrp\n"
        "at_adrp: adrp x13, lit_quad\n"
        "  add x13, x13, :lo12:lit_quad\n"
        "  ldr x12, [x13, #8]\n"
        "  add x10, x10, x12\n"
        "  mov x0, x9\n"
        ".global at_bl\n"
        "at_bl: bl called\n"
        "  add x10, x10, x0\n"
        ".global at_b\n"
        "at_b: b 6f\n"
        "  add x10, x10, #1000\n"
        "6:\n"
        "  mov x0, x10\n"
        "  ldp x29, x30, [sp], #16\n"
        "  ret\n"
        ".size classes, . - classes\n"
        ".balign 16\n"
        "lit_quad: .quad 0x10, 0x20\n"
        "lit_double: .quad 0x100\n"
        "lit_word: .word -0x30000000\n");

int main(int argc, char** argv) {
    long iterations = argc > 1 ? atol(argv[1]) : 8;
    long sum = 0;
    for (long i = 0; i < iterations; i++)
        sum += classes(i);
    finished();
    printf("sum=%ld\n", sum);
    return (int)(sum % 251);
}
