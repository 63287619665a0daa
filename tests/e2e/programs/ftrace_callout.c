/* Inferior for a pad a thread returns into: through() calls callee() through a pointer,
 * `call *%rax` (2 bytes) then an instruction that reads a global (6 bytes). A fast
 * tracepoint at that call moves both into its pad, which makes the call itself: callee()
 * then returns into the pad, not into through(). main calls through() ROUNDS times, then
 * spare() once and finished(); it prints a checksum and exits with checksum % 251, which a
 * return into overwritten pad code would not reach.
 * spare()'s entry is push %rbp, mov %rsp,%rbp, then an instruction that reads a global:
 * room for a 5-byte jump. */
#include <stdio.h>

#define ROUNDS 3

int callee_calls, after_calls, spare_calls;
long total;

void callee(void) {
    callee_calls++; /* MARK: callee_body */
    total = total * 7 + callee_calls;
}

void (*volatile target)(void) = callee;

void through(void) {
    void (*fp)(void) = target;
    fp(); /* MARK: through_call */
    after_calls++;
    total += after_calls;
}

void spare(void) {
    spare_calls++; /* MARK: spare_entry */
    total += 1000;
}

void finished(void) {}

int main(void) {
    for (int i = 0; i < ROUNDS; i++)
        through();
    spare();
    finished();
    printf("total=%ld callee=%d after=%d spare=%d\n", total, callee_calls, after_calls,
           spare_calls);
    return (int)(total % 251);
}
