// A trap instruction of the program's own at trap_here, in own_trap() (a permanent
// breakpoint, in gdb's words), run once per call; and return_one(), for gdb to call. Natively
// the program would die of SIGTRAP at the first call: it runs under a debugger only.
#include <stdio.h>
#include <stdlib.h>

volatile int counter;

int return_one(void) {
    return 1;
}

__attribute__((noinline)) void own_trap(void) {
#if defined(__x86_64__)
    __asm__ volatile(".globl trap_here\ntrap_here:\n\tint3");
#else
    __asm__ volatile(".globl trap_here\ntrap_here:\n\tbrk #0");
#endif
    counter++;
}

int main(int argc, char** argv) {
    int n = argc > 1 ? atoi(argv[1]) : 3;
    for (int i = 0; i < n; i++)
        own_trap();
    printf("counter %d\n", counter);
    return counter == n ? 0 : 1;
}
