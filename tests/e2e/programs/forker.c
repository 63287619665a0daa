/* Forks once: the child runs child_work(4) and exits with its result (5); the parent waits
 * and prints the child's status. For fork events (`catch fork`, follow-fork-mode). */
#include <stdio.h>
#include <sys/wait.h>
#include <unistd.h>

int child_work(int n) {
    return n + 1;
}

int main(void) {
    pid_t child = fork();
    if (child == 0) {
        int code = child_work(4);
        printf("child %d\n", code);
        return code;
    }
    int status;
    waitpid(child, &status, 0);
    printf("parent: child exited %d\n", WEXITSTATUS(status));
    return 0;
}
