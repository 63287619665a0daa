/* Threads that fork over and over: argv[1] threads (8 by default), argv[2] forks each (25),
 * each child ending at once, its parent thread reaping it, then calling round_done(), where
 * gdb stops at a breakpoint whose condition never holds. So fork events, their children and
 * other threads' stops come to gdb together. Prints "forks N" (the children reaped) and exits
 * with 0 when every fork made a child that ended with 0. */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/wait.h>
#include <unistd.h>

int zero;
static long forks_each = 25;
static long reaped;
static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;

__attribute__((noinline)) void round_done(long round) {
    __asm__ volatile("" : : "r"(round) : "memory");
}

static void* fork_rounds(void* unused) {
    (void)unused;
    for (long round = 0; round < forks_each; round++) {
        pid_t child = fork();
        if (child == 0) _exit(0);
        int status = -1;
        if (child > 0 && waitpid(child, &status, 0) == child && WIFEXITED(status) &&
            WEXITSTATUS(status) == 0) {
            pthread_mutex_lock(&lock);
            reaped++;
            pthread_mutex_unlock(&lock);
        }
        round_done(round);
    }
    return NULL;
}

int main(int argc, char** argv) {
    long threads = argc > 1 ? atol(argv[1]) : 8;
    forks_each = argc > 2 ? atol(argv[2]) : 25;
    if (threads < 1 || threads > 64) return 2;
    pthread_t workers[64];
    for (long t = 0; t < threads; t++)
        pthread_create(&workers[t], NULL, fork_rounds, NULL);
    for (long t = 0; t < threads; t++)
        pthread_join(workers[t], NULL);
    printf("forks %ld\n", reaped);
    return reaped == threads * forks_each ? 0 : 1;
}
