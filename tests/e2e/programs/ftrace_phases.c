/* Inferior for more fast tracepoint tests: main runs PHASES phases of CALLS calls of
 * step(n, phase), n = phase * 1000 + call, and calls phase_done(phase) after each phase (a
 * place to stop between phases). step() calls mix(), copies its argument into a 4 KiB
 * array, big, for a large collection, and calls tally(). Every call's value folds into a
 * checksum; main prints it and exits with checksum % 251, so a fast tracepoint that
 * disturbed the code or the stack shows.
 *
 * Usage: ftrace_phases [PHASES [CALLS [STOP_FILE]]]   (default 4 phases of 5 calls)
 *   STOP_FILE  then go on calling step(i, PHASES), i = 0, 1, ..., 10 ms a call, printing
 *              "tick N" every 10 calls, until STOP_FILE exists: a trace can run on while
 *              no debugger is connected.
 *
 * step() is not a leaf, so its entry is push %rbp (1 byte), mov %rsp,%rbp (3 bytes),
 * sub $N,%rsp: a jump at its first instruction replaces several instructions. The lines
 * marked step_body, step_late and tally_body start with an instruction that reads a global
 * (rip-relative, 6 bytes), long enough for a 5-byte jump. */
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

#define BIG 4096

int phase;              /* the phase running */
int hits;               /* calls of step() so far */
long last;              /* the argument of the previous step() */
unsigned char big[BIG]; /* big[k] = (n + k) & 0xff after step(n) */
int late;               /* step() calls past the copy */
int tallies;            /* calls of tally() */
long result;            /* the checksum, once main has it */

long mix(long v) {
    return v ^ (v >> 3);
}

/* No arguments, no locals: nothing in the red zone below the stack pointer. */
void tally(void) {
    tallies++; /* MARK: tally_body */
}

long step(long n, long p) {
    hits++; /* MARK: step_body */
    long value = mix(n * 7 + p);
    for (int k = 0; k < BIG; k++)
        big[k] = (unsigned char)(n + k);
    last = n;
    late++; /* MARK: step_late */
    tally();
    return value;
}

void phase_done(int p) {
    (void)p;
}
void finished(void) {}

int main(int argc, char** argv) {
    int phases = argc > 1 ? atoi(argv[1]) : 4;
    int calls = argc > 2 ? atoi(argv[2]) : 5;
    const char* stop_file = argc > 3 ? argv[3] : NULL;
    unsigned long checksum = 0;
    for (phase = 0; phase < phases; phase++) {
        for (int i = 0; i < calls; i++)
            checksum = checksum * 31 + step(phase * 1000 + i, phase);
        phase_done(phase);
    }
    for (int i = 0; stop_file != NULL && access(stop_file, F_OK) != 0; i++) {
        if (i % 10 == 0) {
            printf("tick %d\n", i); /* progress a test can wait for */
            fflush(stdout);
        }
        checksum = checksum * 31 + step(i, phases);
        usleep(10000);
    }
    result = checksum;
    finished();
    printf("checksum=%lu hits=%d\n", checksum, hits);
    return (int)(checksum % 251);
}
