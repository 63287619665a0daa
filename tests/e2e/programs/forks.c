/* Inferior for the fork tests: main calls work(i) for i in 0..2, forks a child that calls
 * work(i) for i in 0..2 itself and exits with 0 if it got the right sum, then vforks a child
 * that execs /bin/true, then calls work(i) for i in 3..5. It prints
 * "children: fork 0 vfork 0 parent 30" (the children's exit codes, its own sum) and exits with
 * 0 when every child exited normally with 0.
 * Lines tagged "MARK: name" are located by the tests; work_entry reads a global (rip-relative,
 * 6 bytes): room for a fast tracepoint's jump. */
#include <stdio.h>
#include <sys/wait.h>
#include <unistd.h>

int calls;

int work(int x) {
    calls++; /* MARK: work_entry */
    return x * 2;
}

static int child_status(pid_t child) {
    int status = 0;
    if (child < 0 || waitpid(child, &status, 0) != child) return -1;
    return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
}

int main(void) {
    int sum = 0;
    for (int i = 0; i < 3; i++)
        sum += work(i);
    pid_t child = fork();
    if (child == 0) {
        int own = 0;
        for (int i = 0; i < 3; i++)
            own += work(i);
        _exit(own == 6 ? 0 : 1);
    }
    const int forked = child_status(child);
    pid_t vchild = vfork();
    if (vchild == 0) {
        execl("/bin/true", "true", (char*)NULL);
        _exit(127);
    }
    const int vforked = child_status(vchild);
    for (int i = 3; i < 6; i++)
        sum += work(i);
    printf("children: fork %d vfork %d parent %d\n", forked, vforked, sum);
    return forked == 0 && vforked == 0 && sum == 30 ? 0 : 1;
}
