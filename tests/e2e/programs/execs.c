/* Runs another program in its place, for exec events: `execs PATH [ARG...]` execv()s PATH
 * with the arguments after it (argv[0] = PATH), from main; `execs --from-thread PATH ...`
 * does it from a second thread while main waits for that thread. With no program to run
 * it prints "execs: nothing to run" and exits with 0, so that `execs PATH-TO-execs` runs
 * main twice. */
#include <pthread.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

static char** to_run;

static void run_it(void) {
    printf("execs: running %s\n", to_run[0]);
    fflush(stdout);
    execv(to_run[0], to_run);
    perror("execv");
}

static void* exec_from_thread(void* unused) {
    (void)unused;
    run_it();
    return NULL;
}

int main(int argc, char** argv) {
    int from_thread = argc > 1 && strcmp(argv[1], "--from-thread") == 0;
    to_run = argv + 1 + from_thread;
    if (!to_run[0]) {
        puts("execs: nothing to run");
        return 0;
    }
    if (from_thread) {
        pthread_t thread;
        pthread_create(&thread, NULL, exec_from_thread, NULL);
        pthread_join(thread, NULL); /* the exec ends this thread, and main with it */
    } else {
        run_it();
    }
    return 1;
}
