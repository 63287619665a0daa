/* Fast tracepoints at x86-64 instructions shorter than the 5-byte jump (test_ftrace_short.py).
   Each function is written in assembly so that its first instructions, and what reaches the
   ones after them, are known:
     short_entry(n)  xor; mov; lea; ret: nothing reaches inside its first 5 bytes -> a jump.
                     Returns 3n.
     loop_head(n)    xor, then a loop whose head is the next instruction -> a trap. Returns n.
     padded_ret(n)   mov; ret; int3 padding: the padding after the return never runs -> a
                     jump. Returns n.
     leaf_ret(n)     mov; ret; then the next function: the jump would have to displace the
                     return and code after it -> a trap. Returns n.
     table_target()  xor, then an instruction switch_case's jump table leads to -> a trap.
                     Returns 7.
     switch_case(n)  a PIC jump table: n even -> 10, n odd -> table_target's second
                     instruction (7).
     ptr_target()    xor, then an instruction a stored pointer (stored_pointer, in
                     .data.rel.ro) leads to -> a trap. Returns 9; stored_pointer() also 9.
     calls_out(f)    push; call *f; xor...: the call's return address is inside the jump, so
                     a thread in f at tstart keeps it a trap. Returns 1; f is callee().
     jump_after(n)   mov (2 bytes); jmp (2) over dead code: the jump cannot displace the jmp
                     and what follows, so a short jump at the mov leads to the jump to the
                     pad, in the int3 padding after the return (160 bytes of nops away from
                     the functions above, out of their short jumps' reach). Returns n + 1.
   main(calls) calls each once per iteration and prints the sum. */
#include <stdio.h>
#include <stdlib.h>

long short_entry(long n);
long loop_head(long n);
long padded_ret(long n);
long leaf_ret(long n);
long table_target(void);
long switch_case(long n);
long ptr_target(void);
extern long (*const stored_pointer)(void);
long calls_out(void (*f)(void));
long jump_after(long n);

__asm__(".text\n"
        ".globl short_entry\n.type short_entry,@function\nshort_entry:\n"
        "  xor %eax,%eax\n"
        "  mov %rdi,%rdx\n"
        "  lea (%rdx,%rdx,2),%rax\n"
        "  ret\n"
        ".size short_entry,.-short_entry\n"
        ".globl loop_head\n.type loop_head,@function\nloop_head:\n"
        "  xor %eax,%eax\n"
        "1: inc %rax\n"
        "  cmp %rdi,%rax\n"
        "  jl 1b\n"
        "  ret\n"
        ".size loop_head,.-loop_head\n"
        ".globl padded_ret\n.type padded_ret,@function\npadded_ret:\n"
        "  mov %rdi,%rax\n"
        "  ret\n"
        "  int3\n  int3\n  int3\n  int3\n"
        ".size padded_ret,.-padded_ret\n"
        ".globl leaf_ret\n.type leaf_ret,@function\nleaf_ret:\n"
        "  mov %rdi,%rax\n"
        "  ret\n"
        ".size leaf_ret,.-leaf_ret\n"
        ".globl table_target\n.type table_target,@function\ntable_target:\n"
        "  xor %eax,%eax\n"
        ".Ltable_target_inner:\n"
        "  mov $7,%eax\n"
        "  ret\n"
        ".size table_target,.-table_target\n"
        ".globl switch_case\n.type switch_case,@function\nswitch_case:\n"
        "  lea .Lcases(%rip),%rdx\n"
        "  and $1,%edi\n"
        "  movslq (%rdx,%rdi,4),%rax\n"
        "  add %rdx,%rax\n"
        "  jmp *%rax\n"
        ".Leven:\n"
        "  mov $10,%eax\n"
        "  ret\n"
        ".size switch_case,.-switch_case\n"
        ".globl ptr_target\n.type ptr_target,@function\nptr_target:\n"
        "  xor %eax,%eax\n"
        ".Lptr_target_inner:\n"
        "  mov $9,%eax\n"
        "  ret\n"
        ".size ptr_target,.-ptr_target\n"
        ".globl calls_out\n.type calls_out,@function\ncalls_out:\n"
        "  push %rbx\n"
        "  call *%rdi\n"
        "  xor %eax,%eax\n"
        "  pop %rbx\n"
        "  inc %eax\n"
        "  ret\n"
        ".size calls_out,.-calls_out\n"
        /* (Out of a short jump's reach from the functions above: its padding is no slot for
           theirs.) */
        "  .fill 160, 1, 0x90\n"
        ".globl jump_after\n.type jump_after,@function\njump_after:\n"
        "  mov %edi,%eax\n"
        "  jmp 1f\n"
        "  add $100,%rax\n"
        "1: inc %rax\n"
        "  ret\n"
        "  int3\n  int3\n  int3\n  int3\n  int3\n  int3\n  int3\n  int3\n"
        ".size jump_after,.-jump_after\n"
        ".section .rodata\n"
        ".balign 4\n"
        ".Lcases:\n"
        "  .long .Leven-.Lcases\n"
        "  .long .Ltable_target_inner-.Lcases\n"
        ".section .data.rel.ro,\"aw\"\n"
        ".balign 8\n"
        ".globl stored_pointer\n"
        "stored_pointer:\n"
        "  .quad .Lptr_target_inner\n"
        ".text\n");

__attribute__((noinline)) void callee(void) {
    __asm__ volatile("" ::: "memory");
}

__attribute__((noinline)) void finished(void) {
    __asm__ volatile("" ::: "memory");
}

int main(int argc, char** argv) {
    const long calls = argc > 1 ? atol(argv[1]) : 5;
    long sum = 0;
    for (long i = 0; i < calls; i++)
        sum += short_entry(i) + loop_head(i + 1) + padded_ret(i) + leaf_ret(i) + table_target() +
               switch_case(i) + ptr_target() + stored_pointer() + calls_out(callee) + jump_after(i);
    printf("sum %ld\n", sum);
    finished();
    return 0;
}
