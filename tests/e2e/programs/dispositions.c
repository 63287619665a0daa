/* Exits with a bit set for each of SIGPIPE, SIGXFSZ, SIGTTOU, SIGTTIN that it was started
 * with ignored: 0 as when started from a shell. */
#include <signal.h>
#include <stddef.h>

int main(void) {
    const int signals[] = {SIGPIPE, SIGXFSZ, SIGTTOU, SIGTTIN};
    int ignored = 0;
    for (size_t i = 0; i < sizeof signals / sizeof signals[0]; i++) {
        struct sigaction now;
        if (sigaction(signals[i], NULL, &now) == 0 && now.sa_handler == SIG_IGN) ignored |= 1 << i;
    }
    return ignored;
}
