/* Forks once: the child runs child_work(4) and exits with its result (5); the parent waits
 * and prints the child's status. For fork events (`catch fork`, follow-fork-mode). With an
 * argument, the child first creates that file and then waits until a debugger sets
 * `waiting` to 0 (for Ctrl-C in a followed child). */
#include <stdio.h>
#include <sys/wait.h>
#include <unistd.h>

#include <fcntl.h>

volatile int waiting = 1;

int child_work(int n) {
    return n + 1;
}

int main(int argc, char** argv) {
    pid_t child = fork();
    if (child == 0) {
        if (argc > 1) {
            close(open(argv[1], O_WRONLY | O_CREAT, 0600));
            while (waiting)
                usleep(1000);
        }
        int code = child_work(4);
        printf("child %d\n", code);
        return code;
    }
    int status;
    waitpid(child, &status, 0); /* MARK: parent waits */
    printf("parent: child exited %d\n", WEXITSTATUS(status));
    return 0;
}
