/* The program never_harm.c execv()s in test_never_harm.py's exec test: it takes over the
 * process that had a fast tracepoint, so a server that still treats the process as the old
 * program (writing the old instruction back over the tracepoint's jump at tstop, say)
 * writes into this program's code.
 *
 * count_up() comes first in the file, so that it starts where the traced program's first
 * functions do (both are non-PIE, linked at the same address) and, being 12 KiB of
 * "add $1, %eax" (83 c0 01, 4096 times), covers the address of that program's tracepoint.
 * Any byte written there changes the count or crashes the program.
 *
 * main first stops itself with SIGUSR1 (handled, so that a run without a debugger goes on
 * the same way): the debugger, which is not told about the exec, gets a stop to end the
 * trace at and look at the code before count_up() runs. Then it prints
 * "target: count=4096" and exits with count % 251 (80). */
#include <signal.h>
#include <stdio.h>
#include <string.h>

long count_up(void) {
    long count;
    __asm__ volatile("xor %%eax, %%eax\n\t"
                     ".rept 4096\n\t"
                     "add $1, %%eax\n\t"
                     ".endr"
                     : "=a"(count));
    return count;
}

static void on_usr1(int sig) {
    (void)sig;
}

int main(void) {
    struct sigaction action;
    memset(&action, 0, sizeof action);
    action.sa_handler = on_usr1;
    sigaction(SIGUSR1, &action, NULL);
    raise(SIGUSR1);
    long count = count_up();
    printf("target: count=%ld\n", count);
    return (int)(count % 251);
}
