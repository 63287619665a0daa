/* Inferior for test_never_harm.py: tracing must never change what a program does. main
 * calls probe(p, i) for i = 0 .. PASSES-1 and prints what the passes added up to, so a
 * tracepoint that disturbed the program's code, its stack or its memory shows in the
 * output or the exit code, and a trace frame's values tell which pass it holds.
 *
 * The traced line in probe() is one instruction, written in assembly so that it is exactly
 * "addl $1, hits(%rip)" (83 05 disp32 01, 7 bytes): a fast tracepoint's 5-byte jump covers
 * it, and a debugger that rewrites its last byte (the 1) changes what each pass adds.
 * The line before it (marked "before") is a place to stop and step from; the line after it
 * (marked "after") is where stepping over it lands.
 *
 * Usage: never_harm MODE [PASSES [TARGET]]   (default 6 passes)
 *   run      just the passes.
 *   unmap    p points into a page of its own: p[0] = i, p[k] = 1000 + k (k = 1 .. 15)
 *            while it is there; halfway (before pass PASSES/2) the page is unmapped, so
 *            a tracepoint collecting through p from then on finds no memory there.
 *   protect  the same, with mprotect(PROT_NONE) instead of munmap.
 *   exec     after the passes, execv(TARGET): another program takes over the process
 *            (see never_harm_exec_target.c).
 * ready() is called once the page is there, before the first pass, halfway() before pass
 * PASSES/2, finished() after the last pass, and about_to_exec() just before the execv:
 * places for a debugger to stop. A trace started at ready() starts while the page is
 * mapped: a collector that trusts what was mapped at tstart reads it after it is gone.
 * watched is set at the end of each pass (to i + 1, by pass_done()): something for a
 * watchpoint to watch.
 *
 * Output: "passes=N hits=H seen=S total=T" (seen: p[0..15] summed over the passes that
 * had the page; total: probe()'s results summed); exit status H. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#define WORDS 16

int hits;    /* the traced instruction adds 1 per pass */
int watched; /* i + 1 once pass i is done */

void ready(void) {}
void halfway(void) {}
void finished(void) {}
void about_to_exec(void) {}

/* probe() calls it, so that probe() is no leaf function: its locals are above the stack
 * pointer, not in the red zone (which gdbserver's jump pads overwrite). */
void pass_done(long i) {
    watched = (int)i + 1;
}

long probe(const long* p, long i) {
    long before = i * 3;                          /* MARK: before */
    __asm__ volatile("addl $1, %0" : "+m"(hits)); /* MARK: traced */
    long after = before + hits;                   /* MARK: after */
    pass_done(i);
    return after;
}

int main(int argc, char** argv) {
    const char* mode = argc > 1 ? argv[1] : "run";
    int passes = argc > 2 ? atoi(argv[2]) : 6;
    int unmap = strcmp(mode, "unmap") == 0;
    int protect = strcmp(mode, "protect") == 0;
    long* page = NULL;
    long seen = 0, total = 0;
    if (unmap || protect) {
        page = mmap(NULL, 4096, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
        if (page == MAP_FAILED) return 100;
        for (int k = 0; k < WORDS; k++)
            page[k] = 1000 + k;
    }
    int mapped = page != NULL;
    ready();
    for (int i = 0; i < passes; i++) {
        if (i == passes / 2) {
            halfway();
            if (unmap && munmap(page, 4096) != 0) return 101;
            if (protect && mprotect(page, 4096, PROT_NONE) != 0) return 102;
            mapped = 0;
        }
        if (mapped) {
            page[0] = i;
            for (int k = 0; k < WORDS; k++)
                seen += page[k];
        }
        total += probe(page, i);
    }
    finished();
    printf("passes=%d hits=%d seen=%ld total=%ld\n", passes, hits, seen, total);
    fflush(stdout);
    if (strcmp(mode, "exec") == 0 && argc > 3) {
        about_to_exec();
        char* target_argv[] = {argv[3], NULL};
        execv(argv[3], target_argv);
        perror("execv");
        return 103;
    }
    return hits;
}
