/* A fast tracepoint's cost per hit in a child the trace follows (tpagent --trace-follow-fork),
 * against the same in the parent: N calls of traced() untraced (the baseline), then, after
 * ready() returns (gdb starts the trace there), N calls in the parent, then N in a child it forks,
 * which sends its loop's wall time through a pipe; done() is called after. The loops' wall times
 * land in globals, which gdb prints at done(). Usage: fork_hits N */
#include <stdlib.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

long counter;
long calls, base_ns, parent_ns, child_ns; /* read by gdb at done() */

/* The fast tracepoint goes on the first instruction, `add %rdi,counter(%rip)` (7 bytes). */
__attribute__((noipa)) void traced(long n) {
    counter += n;
}

__attribute__((noipa)) void ready(void) {
    __asm__ volatile("");
}

__attribute__((noipa)) void done(void) {
    __asm__ volatile("");
}

static long now_ns(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec * 1000000000L + ts.tv_nsec;
}

static long loop(long n) {
    const long t0 = now_ns();
    for (long i = 0; i < n; i++)
        traced(i);
    return now_ns() - t0;
}

int main(int argc, char** argv) {
    calls = argc > 1 ? atol(argv[1]) : 1000000;
    base_ns = loop(calls);
    ready();
    parent_ns = loop(calls);
    int link[2];
    if (pipe(link) != 0) return 1;
    const pid_t child = fork();
    if (child == 0) {
        const long ns = loop(calls);
        _exit(write(link[1], &ns, sizeof ns) == sizeof ns ? 0 : 1);
    }
    close(link[1]);
    if (read(link[0], &child_ns, sizeof child_ns) != sizeof child_ns) child_ns = -1;
    waitpid(child, NULL, 0);
    done();
    return 0;
}
