/* Loads the C library's libm into a new link-map namespace (dlmopen), which then holds a
 * libc and a dynamic loader of its own, and stops in stopped_here(): for gdb's library list
 * across namespaces (qXfer:libraries-svr4). */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <stdio.h>

void stopped_here(void) {}

int main(void) {
    void* lib = dlmopen(LM_ID_NEWLM, "libm.so.6", RTLD_NOW);
    printf("loaded: %s\n", lib ? "yes" : dlerror());
    stopped_here();
    return 0;
}
