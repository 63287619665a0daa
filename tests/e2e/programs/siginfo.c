/* Queues itself SIGUSR1 with a value (sigqueue), and exits with the value its handler saw:
 * for the test that gdb can read and change $_siginfo before the signal is delivered. */
#include <signal.h>
#include <unistd.h>

static volatile int seen = -1;

static void on_usr1(int signo, siginfo_t* info, void* context) {
    (void)signo;
    (void)context;
    seen = info->si_value.sival_int;
}

int main(void) {
    struct sigaction action = {0};
    action.sa_sigaction = on_usr1;
    action.sa_flags = SA_SIGINFO;
    sigaction(SIGUSR1, &action, 0);
    union sigval value = {.sival_int = 7};
    sigqueue(getpid(), SIGUSR1, value);
    return seen;
}
