/* Inferior for the qRelocInsn tests (test_ftrace_relocinsn.py): main calls probe(i) for
 * i = 0 .. ITERATIONS-1, folds the results into a checksum, prints it and exits with
 * checksum % 251, so a site whose relocated code went wrong shows in the result.
 *
 * probe() is written in assembly so that the instructions at its sites (global labels) are
 * exactly these:
 *   site_pair   mov %rbx, %rdi           3 bytes: a jump there displaces it and the call
 *   site_call   call helper              e8 rel32 (gdb relocates it as push + jmp)
 *   site_riprel add %rax, total(%rip)    rip-relative, read-modify-write
 *   site_branch jne rel32                taken for odd n
 *   site_short  ds ds ds jne rel8        5 bytes with branch-hint prefixes; gdb 13 copies
 *                                        the rel8 unchanged, which would branch astray
 * probe(n) returns 7n+1, plus 100 for even n, plus 1000 for n == 3.
 *
 * Usage: ftrace_reloc [ITERATIONS]   (default 5) */
#include <stdio.h>
#include <stdlib.h>

long total; /* sum of helper()'s results, added at site_riprel */
long calls; /* helper() calls so far */
long last;  /* helper()'s last argument */

long helper(long n) {
    calls++;
    last = n;
    return 7 * n + 1;
}

long probe(long n);
__asm__(".text\n"
        ".globl probe\n"
        ".type probe, @function\n"
        "probe:\n"
        "    pushq %rbx\n"
        "    movq %rdi, %rbx\n"
        ".globl site_pair\n"
        "site_pair:\n"
        "    movq %rbx, %rdi\n"
        ".globl site_call\n"
        "site_call:\n"
        "    call helper\n"
        ".globl site_riprel\n"
        "site_riprel:\n"
        "    addq %rax, total(%rip)\n"
        "    testq $1, %rbx\n"
        ".globl site_branch\n"
        "site_branch:\n"
        "    .byte 0x0f, 0x85\n" /* jne rel32 */
        "    .long 1f - 2f\n"
        "2:\n"
        "    addq $100, %rax\n"
        "1:\n"
        "    cmpq $3, %rbx\n"
        ".globl site_short\n"
        "site_short:\n"
        "    .byte 0x3e, 0x3e, 0x3e, 0x75\n" /* ds ds ds jne rel8 */
        "    .byte 3f - 4f\n"
        "4:\n"
        "    addq $1000, %rax\n"
        "3:\n"
        "    popq %rbx\n"
        "    ret\n"
        ".size probe, .-probe\n");

void finished(void) {}

int main(int argc, char** argv) {
    int iterations = argc > 1 ? atoi(argv[1]) : 5;
    long checksum = 0;
    for (int i = 0; i < iterations; i++)
        checksum = checksum * 31 + probe(i);
    finished();
    printf("checksum=%ld total=%ld calls=%ld\n", checksum, total, calls);
    return (int)(checksum % 251);
}
