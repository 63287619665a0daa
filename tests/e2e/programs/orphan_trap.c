/* A breakpoint left in the program with no debugger, as a killed tpagent leaves one a thread
 * has just hit: main writes a breakpoint instruction over the start of work() (its code made
 * writable), a thread puts the original back 100 ms later (as tpagent's watchdog does), and
 * main calls work(). With tpagent's in-process agent loaded, the call waits for the code to
 * come back and runs it; without it, the SIGTRAP ends the program.
 * Prints "work=13" and exits 0. */
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

__attribute__((noinline)) int work(int x) {
    return x * 3 + 1;
}

static unsigned char* site;
static unsigned char saved[4];

static void* restore(void* unused) {
    (void)unused;
    usleep(100000);
    memcpy(site, saved, sizeof saved);
    __builtin___clear_cache((char*)site, (char*)site + sizeof saved);
    return NULL;
}

int main(void) {
    site = (unsigned char*)&work;
    const long page = sysconf(_SC_PAGESIZE);
    void* start = (void*)((uintptr_t)site & ~(uintptr_t)(page - 1));
    if (mprotect(start, 2 * page, PROT_READ | PROT_WRITE | PROT_EXEC) != 0) {
        perror("mprotect");
        return 2;
    }
    memcpy(saved, site, sizeof saved);
#if defined(__x86_64__)
    site[0] = 0xcc; /* int3 */
#elif defined(__aarch64__)
    const uint32_t brk = 0xd4200000; /* brk #0 */
    memcpy(site, &brk, sizeof brk);
#endif
    __builtin___clear_cache((char*)site, (char*)site + sizeof saved);
    pthread_t thread;
    pthread_create(&thread, NULL, restore, NULL);
    const int result = work(4);
    pthread_join(thread, NULL);
    printf("work=%d\n", result);
    return 0;
}
