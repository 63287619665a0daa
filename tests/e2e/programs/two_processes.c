/* Forks once; the parent and the child each call their own function TICKS times, at the same
 * moments (a hit in one often comes while the other's is reported), then the parent waits for
 * the child. For several processes under one stub: schedule-multiple, non-stop, two inferiors.
 * An argument sets the time between ticks in microseconds (10000). */
#include <stdio.h>
#include <stdlib.h>
#include <sys/wait.h>
#include <unistd.h>

#define TICKS 3

int parent_tick(int i) {
    return i + 1;
}

int child_tick(int i) {
    return i + 2;
}

int main(int argc, char** argv) {
    const int pause_us = argc > 1 ? atoi(argv[1]) : 10000;
    pid_t child = fork();
    int sum = 0;
    for (int i = 0; i < TICKS; ++i) {
        usleep(pause_us);
        sum += child == 0 ? child_tick(i) : parent_tick(i);
    }
    if (child == 0) {
        printf("child ticked %d\n", sum); /* MARK: child ends */
        return 3;
    }
    int status;
    waitpid(child, &status, 0); /* MARK: parent waits */
    printf("parent ticked %d; child exited %d\n", sum, WEXITSTATUS(status));
    return 0;
}
