/* Inferior that sends itself SIGUSR1 three times; the exit code counts the handler runs. */
#include <signal.h>

static volatile sig_atomic_t handled;

static void on_usr1(int signo) {
    (void)signo;
    handled++;
}

int main(void) {
    signal(SIGUSR1, on_usr1);
    for (int i = 0; i < 3; i++)
        raise(SIGUSR1);
    return handled;
}
