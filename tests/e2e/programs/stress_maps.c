/* Inferior for test_stress_never_harm.py: a program whose memory map keeps changing under a
 * running trace, while gdb stops it, steps it and writes into it. Tracing must never harm it:
 * it raises no signal itself, so any signal gdb reports was caused by the debugger side, and
 * its output (which never depends on tracing) must be a native run's.
 *
 * One page at a fixed address (the first mmap's) goes through four states, chosen by the
 * iteration number i alone, so that a test can tell from i what a trace frame should hold:
 *   i % 4 == 0  WRITE    the page is mapped read/write; p's words get content(i)
 *   i % 4 == 1  UNMAP    the page is munmapped
 *   i % 4 == 2  PROTECT  a new page is mapped there, gets content(i), then PROT_NONE
 *   i % 4 == 3  REMAP    a new read/write page replaces it (MAP_FIXED), gets content(i)
 * So the page is readable exactly when i % 4 is 0 or 3. p points at WORDS words in slot
 * (i * 5) % SLOTS of the page; word k there is content(i, k) = i * 1000003 + k * 7919 + 1.
 * Then traced(i, p) runs: its lines marked "fast" (a 7-byte rip-relative mov, long enough
 * for a fast tracepoint's jump) and "trap" are the places to trace, both before anything
 * reads *p. Every CHECK_EVERY iterations main calls checkpoint(), an empty
 * function: a place for gdb's breakpoint.
 *
 * Usage: stress_maps ITERATIONS [SECONDS]
 *   Runs ITERATIONS iterations, or fewer: with SECONDS, it also stops at the first
 *   iteration that is a multiple of CHECK_EVERY once SECONDS of wall time have passed
 *   (time stopped in a debugger counts). Then it sets leaving = 1, calls finished() and
 *   prints "iterations=N traced=C checksum=X" and exits 0; "stress_maps N" without SECONDS
 *   prints the same line. Any failing system call exits with a status of 10 or more.
 *
 * Globals a debugger reads: traced_calls (calls of traced() so far: the passes over each of
 * its lines), last_i, page, leaving. poked is for a debugger to write: the program never
 * reads it. */
#define _GNU_SOURCE
#include <stdio.h>
#include <stdlib.h>
#include <sys/mman.h>
#include <time.h>

#define PAGE 4096
#define WORDS 8  /* a test collects p[0]@WORDS */
#define SLOTS 16 /* p's slot: (i * 5) % SLOTS, each slot 256 bytes */
#define SLOT_BYTES 256
#define CHECK_EVERY 4 /* checkpoint() after iterations 3, 7, 11, ... */

unsigned char* page; /* the page's address, the same all run long */
long traced_calls;   /* calls of traced() */
long last_i = -1;    /* the iteration traced() last ran for */
int leaving;         /* 1 once the loop is over, just before finished() */
volatile long poked; /* written by a debugger, never read by the program */

void checkpoint(void) {}
void finished(void) {}

int readable(long i) {
    return i % 4 == 0 || i % 4 == 3;
}

long content(long i, long k) {
    return i * 1000003 + k * 7919 + 1;
}

long fold(long i, long seen) {
    return (seen ^ (i << 7)) + 3 * i;
}

/* Not a leaf (it calls fold), so its locals are above the stack pointer. */
long traced(long i, const long* p) {
    long seen = 0;
    traced_calls++; /* MARK: fast */
    last_i = i;     /* MARK: trap */
    if (readable(i)) seen = p[0] + p[WORDS - 1];
    return fold(i, seen);
}

static void fail(const char* what, int status) {
    perror(what);
    exit(status);
}

static void map_page(int flags) {
    void* got =
        mmap(page, PAGE, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | flags, -1, 0);
    if (got == MAP_FAILED) fail("mmap", 11);
    if (got != page) {
        fprintf(stderr, "mmap: %p instead of %p\n", got, (void*)page);
        exit(12);
    }
}

/* The page in iteration i's state; returns p. */
static long* set_page(long i) {
    long* p = (long*)(page + (i * 5) % SLOTS * SLOT_BYTES);
    switch (i % 4) {
    case 0: /* WRITE: read/write since the last REMAP (or the first mmap) */
        break;
    case 1: /* UNMAP */
        if (munmap(page, PAGE) != 0) fail("munmap", 13);
        return p;
    case 2: /* PROTECT: the address is free since the UNMAP */
        map_page(MAP_FIXED_NOREPLACE);
        break;
    case 3: /* REMAP over the PROT_NONE page */
        map_page(MAP_FIXED);
        break;
    }
    for (long k = 0; k < WORDS; k++)
        p[k] = content(i, k);
    if (i % 4 == 2 && mprotect(page, PAGE, PROT_NONE) != 0) fail("mprotect", 14);
    return p;
}

static double seconds_since(const struct timespec* start) {
    struct timespec now;
    clock_gettime(CLOCK_MONOTONIC, &now);
    return (double)(now.tv_sec - start->tv_sec) + (double)(now.tv_nsec - start->tv_nsec) / 1e9;
}

int main(int argc, char** argv) {
    if (argc < 2) {
        fprintf(stderr, "usage: stress_maps ITERATIONS [SECONDS]\n");
        return 2;
    }
    long iterations = atol(argv[1]);
    double seconds = argc > 2 ? atof(argv[2]) : 0;
    page = mmap(NULL, PAGE, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (page == MAP_FAILED) fail("mmap", 10);
    struct timespec start;
    clock_gettime(CLOCK_MONOTONIC, &start);

    unsigned long checksum = 0;
    long i;
    for (i = 0; i < iterations; i++) {
        if (seconds > 0 && i % CHECK_EVERY == 0 && seconds_since(&start) >= seconds) break;
        long* p = set_page(i);
        checksum = checksum * 31 + (unsigned long)traced(i, p);
        if (readable(i)) checksum += (unsigned long)p[1]; /* the program reads the page too */
        if (i % CHECK_EVERY == CHECK_EVERY - 1) checkpoint();
    }
    leaving = 1;
    finished();
    printf("iterations=%ld traced=%ld checksum=%lu\n", i, traced_calls, checksum);
    return 0;
}
