/* A second thread that prints and ends while main waits for it: for the `N` stop reply
 * (no-resumed), when gdb resumes only that thread (scheduler-locking) and it exits. */
#include <pthread.h>
#include <stdio.h>

static void* worker(void* unused) {
    (void)unused;
    puts("worker ends");
    return NULL;
}

int main(void) {
    pthread_t thread;
    pthread_create(&thread, NULL, worker, NULL);
    pthread_join(thread, NULL);
    puts("main ends");
    return 0;
}
