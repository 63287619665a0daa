/* Two threads each make three getppid() calls, then the program prints "done": for
 * `catch syscall` with several threads running. */
#include <pthread.h>
#include <stdio.h>
#include <unistd.h>

static void* calls(void* unused) {
    (void)unused;
    for (int i = 0; i < 3; i++)
        getppid();
    return NULL;
}

int main(void) {
    pthread_t threads[2];
    for (int i = 0; i < 2; i++)
        pthread_create(&threads[i], NULL, calls, NULL);
    for (int i = 0; i < 2; i++)
        pthread_join(threads[i], NULL);
    puts("done");
    return 0;
}
