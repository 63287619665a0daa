/* Inferior that gets SIGALRM and SIGCHLD, which gdb passes to the program without stopping
 * (QPassSignals): an interval timer fires at least 20 times (one or two more may come before
 * it is stopped) and a child exits; the handlers count. Prints "alarms>=20 children=1" and
 * exits with 0 when both arrived. */
#include <signal.h>
#include <stdio.h>
#include <sys/time.h>
#include <sys/wait.h>
#include <unistd.h>

static volatile sig_atomic_t alarms, children;

static void on_alarm(int signo) {
    (void)signo;
    alarms++;
}

static void on_child(int signo) {
    (void)signo;
    children++;
}

int main(void) {
    signal(SIGALRM, on_alarm);
    signal(SIGCHLD, on_child);
    struct itimerval every_ms = {{0, 1000}, {0, 1000}};
    setitimer(ITIMER_REAL, &every_ms, NULL);
    while (alarms < 20)
        pause();
    struct itimerval off = {{0, 0}, {0, 0}};
    setitimer(ITIMER_REAL, &off, NULL);
    pid_t child = fork();
    if (child == 0) _exit(0);
    while (!children)
        pause();
    waitpid(child, NULL, 0);
    printf("alarms%s20 children=%d\n", alarms >= 20 ? ">=" : "<", children);
    return alarms >= 20 && children == 1 ? 0 : 1;
}
