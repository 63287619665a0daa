/* Calls, a loop and a recursion for branch tracing (record btrace): main calls work(), which
 * loops over square() and recurses through fact(). "threads" runs work() in two more threads;
 * "signal" raises SIGUSR1, handled by on_signal(), first. */
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>

volatile long sink;

__attribute__((noinline)) long square(long x) {
    return x * x;
}

__attribute__((noinline)) long fact(long n) {
    if (n <= 1) return 1;
    return n * fact(n - 1);
}

__attribute__((noinline)) long work(long n) {
    long sum = 0;
    for (long i = 0; i < n; i++)
        sum += square(i);
    return sum + fact(5);
}

__attribute__((noinline)) void done(long result) {
    sink = result;
}

volatile int signals_handled;

static void on_signal(int sig) {
    (void)sig;
    signals_handled++;
}

static void* thread_main(void* arg) {
    long n = (long)arg;
    done(work(n));
    return NULL;
}

int main(int argc, char** argv) {
    if (argc > 1 && strcmp(argv[1], "threads") == 0) {
        pthread_t t[2];
        for (long i = 0; i < 2; i++)
            pthread_create(&t[i], NULL, thread_main, (void*)(3 + i));
        for (int i = 0; i < 2; i++)
            pthread_join(t[i], NULL);
    }
    if (argc > 1 && strcmp(argv[1], "signal") == 0) {
        signal(SIGUSR1, on_signal);
        raise(SIGUSR1);
        printf("signals handled %d\n", signals_handled);
    }
    long r = work(3);
    done(r); /* MARK: first done */
    r = work(4);
    done(r);
    printf("result %ld\n", r);
    return 0;
}
