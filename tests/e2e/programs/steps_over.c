/* Lines that enter the kernel in each way a step must get over: a plain system call, a
 * raw `syscall` instruction (x86-64; for stepi), clone (a thread), fork and vfork. The
 * children exit at once (3 and 4); the program prints "done 4" and exits with 0. */
#include <pthread.h>
#include <stdio.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

static void* worker(void* unused) {
    (void)unused;
    return NULL;
}

static long raw_getpid(void) {
    long pid;
#if defined(__x86_64__)
    __asm__ volatile(".globl raw_syscall\nraw_syscall: syscall"
                     : "=a"(pid)
                     : "a"((long)SYS_getpid)
                     : "rcx", "r11", "memory");
#else
    pid = syscall(SYS_getpid);
#endif
    return pid;
}

int main(void) {
    pthread_t thread;
    int status;
    getppid();                                   /* MARK: syscall */
    raw_getpid();                                /* MARK: raw */
    pthread_create(&thread, NULL, worker, NULL); /* MARK: clone */
    pthread_join(thread, NULL);                  /* MARK: join */
    pid_t child = fork();                        /* MARK: fork */
    if (child == 0) _exit(3);                    /* MARK: after fork */
    waitpid(child, &status, 0);
    pid_t vchild = vfork();    /* MARK: vfork */
    if (vchild == 0) _exit(4); /* MARK: after vfork */
    waitpid(vchild, &status, 0);
    printf("done %d\n", WEXITSTATUS(status)); /* MARK: print */
    return 0;
}
