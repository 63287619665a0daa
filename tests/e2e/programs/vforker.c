/* vforks once: the child runs child_work(4) and exits with its result (5), or with the
 * argument "exec" runs /bin/true instead. The parent, going on once the child is done, calls
 * after_vfork() and prints the child's status. For vfork events (`catch vfork`,
 * follow-fork-mode). */
#include <stdio.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

int child_work(int n) {
    return n + 1;
}

void after_vfork(int pid) {
    (void)pid;
}

int main(int argc, char** argv) {
    pid_t child = vfork();
    if (child == 0) {
        if (argc > 1 && strcmp(argv[1], "exec") == 0) execl("/bin/true", "true", (char*)NULL);
        _exit(child_work(4));
    }
    after_vfork(child);
    int status;
    waitpid(child, &status, 0);
    printf("parent: child exited %d\n", WEXITSTATUS(status));
    return 0;
}
