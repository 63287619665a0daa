/* Two threads each make three getppid() calls, then the program prints "done": for
 * `catch syscall` with several threads running. */
#include <pthread.h>
#include <stdio.h>
#include <unistd.h>

#include "workers.h"

static void* call_getppid(void* unused) {
    (void)unused;
    for (int i = 0; i < 3; i++)
        getppid();
    return NULL;
}

int main(void) {
    pthread_t threads[2];
    start_workers(threads, 2, call_getppid);
    join_workers(threads, 2);
    puts("done");
    return 0;
}
