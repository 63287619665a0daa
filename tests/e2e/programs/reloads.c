/* Inferior for a breakpoint in a library unloaded and another mapped where it was
 * (gdb.base/unload.exp): loads LIB1 with dlopen and calls its SYMBOL1(1), unloads it, then
 * does the same with LIB2 and SYMBOL2(2). Built from the same source (reloaded_lib.c), the
 * two functions sit at the same offset, and the second library is usually mapped where the
 * first was. Prints both results and exits with 0.
 *
 * Usage: reloads LIB1 SYMBOL1 LIB2 SYMBOL2 */
#include <dlfcn.h>
#include <stdio.h>

static int call(const char* path, const char* symbol, int arg) {
    void* handle = dlopen(path, RTLD_NOW);
    if (!handle) {
        fprintf(stderr, "%s\n", dlerror());
        return -1;
    }
    int (*entry)(int) = (int (*)(int))dlsym(handle, symbol);
    const int result = entry ? entry(arg) : -1;
    dlclose(handle);
    return result;
}

int main(int argc, char** argv) {
    if (argc < 5) return 2;
    const int first = call(argv[1], argv[2], 1);
    const int second = call(argv[3], argv[4], 2);
    printf("results: %d %d\n", first, second);
    return 0;
}
