/* Thread-local variables to print from gdb (qGetTLSAddr): main and one worker each set their
 * own `counter`, `name` and errno, then both wait at a barrier while main calls stop_here().
 * Prints "done 42" and exits with 0. */
#include <errno.h>
#include <pthread.h>
#include <stdio.h>

__thread long counter = 42;
__thread char name[16] = "main";
static pthread_barrier_t barrier;

void stop_here(void) {}

static void* worker(void* unused) {
    counter = 7;
    name[0] = 'w';
    errno = 33;
    pthread_barrier_wait(&barrier);
    pthread_barrier_wait(&barrier);
    return unused;
}

int main(void) {
    pthread_t thread;
    pthread_barrier_init(&barrier, NULL, 2);
    errno = 11;
    pthread_create(&thread, NULL, worker, NULL);
    pthread_barrier_wait(&barrier);
    stop_here(); /* MARK: both threads set */
    pthread_barrier_wait(&barrier);
    pthread_join(thread, NULL);
    printf("done %ld\n", counter);
    return 0;
}
