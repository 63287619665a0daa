/* Inferior for placing the in-process agent while another thread holds malloc's lock: a
 * thread calls glibc's malloc_stats(), which prints to stderr while it holds the main arena's
 * lock, with stderr a pipe that is already full and that nobody reads: the thread blocks in
 * write() with the lock held, for good. Once /proc says it is in write(), main calls
 * locked() (a place for a debugger to stop), then traced(i) for i in 0..ITERATIONS-1 and
 * finished(), and exits with sum % 251 by _exit (main allocates nothing after the lock is
 * taken: malloc would wait forever). A dlopen in the program would wait on that lock too.
 *
 * Usage: ftrace_malloc_lock [ITERATIONS]   (default 5) */
#include <fcntl.h>
#include <malloc.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>

static volatile pid_t holder_tid;
long sum;
int calls;

static void* hold_malloc_lock(void* arg) {
    (void)arg;
    holder_tid = (pid_t)syscall(SYS_gettid);
    malloc_stats(); /* blocks in write(2) to the full pipe, the arena locked */
    return NULL;
}

/* Whether thread tid is in write(2) (/proc/self/task/TID/syscall starts with its number). */
static int in_write(pid_t tid) {
    char path[64], text[64] = {0};
    snprintf(path, sizeof path, "/proc/self/task/%d/syscall", (int)tid);
    int fd = open(path, O_RDONLY);
    if (fd < 0) return 0;
    ssize_t n = read(fd, text, sizeof text - 1);
    close(fd);
    return n > 0 && strncmp(text, "1 ", 2) == 0;
}

void locked(void) {}
void finished(void) {}

long traced(long n) {
    calls++; /* MARK: traced_entry (a rip-relative load: 6 bytes, room for the jump) */
    sum += n * n;
    return sum;
}

int main(int argc, char** argv) {
    int iterations = argc > 1 ? atoi(argv[1]) : 5;
    int pipe_fds[2];
    if (pipe(pipe_fds) != 0) return 2;
    /* Fill the pipe, then make its write end stderr, blocking. */
    fcntl(pipe_fds[1], F_SETFL, O_NONBLOCK);
    char block[4096];
    memset(block, 'x', sizeof block);
    while (write(pipe_fds[1], block, sizeof block) > 0) {
    }
    fcntl(pipe_fds[1], F_SETFL, 0);
    dup2(pipe_fds[1], 2);
    pthread_t holder;
    if (pthread_create(&holder, NULL, hold_malloc_lock, NULL) != 0) return 3;
    while (holder_tid == 0 || !in_write(holder_tid))
        usleep(1000);
    usleep(20000); /* well inside the write, past any retry */
    locked();
    for (int i = 0; i < iterations; i++)
        traced(i);
    finished();
    _exit((int)(sum % 251));
}
