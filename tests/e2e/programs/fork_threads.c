/* Two threads fork at the same moment (a barrier): one fork event is held back while gdb
 * handles the other. Each child exits with 7; the program prints "done". */
#include <pthread.h>
#include <stdio.h>
#include <sys/wait.h>
#include <unistd.h>

#include "workers.h"

static void* fork_one(void* unused) {
    (void)unused;
    pthread_barrier_wait(&together);
    pid_t child = fork();
    if (child == 0) _exit(7);
    int status;
    waitpid(child, &status, 0);
    printf("child exited %d\n", WEXITSTATUS(status));
    return NULL;
}

int main(void) {
    pthread_t threads[2];
    pthread_barrier_init(&together, NULL, 2); /* workers.h's barrier */
    start_workers(threads, 2, fork_one);
    join_workers(threads, 2);
    puts("done");
    return 0;
}
