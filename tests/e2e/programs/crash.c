/* Inferior that dies by a signal: "crash segv" dereferences NULL, "crash abort" aborts. */
#include <stdlib.h>
#include <string.h>

int main(int argc, char** argv) {
    if (argc == 2 && strcmp(argv[1], "segv") == 0) {
        volatile int* null_pointer = NULL;
        return *null_pointer; /* MARK: segv */
    }
    if (argc == 2 && strcmp(argv[1], "abort") == 0) abort();
    return 2;
}
