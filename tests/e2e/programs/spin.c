/* Inferior that never stops by itself: writes "1" to READY_FILE (argv[1]) then spins.
 * A debugger that sets "announce" gets "2", "3"... written there, so a test knows the
 * program runs again after being resumed. */
#include <stdio.h>

volatile unsigned long spins;
volatile int announce;

static void create(const char* path) {
    static int generation;
    FILE* file = fopen(path, "w");
    if (file != NULL) {
        fprintf(file, "%d\n", ++generation);
        fclose(file);
    }
}

int main(int argc, char** argv) {
    if (argc > 1) create(argv[1]);
    for (;;) {
        spins++;
        if (announce && argc > 1) {
            announce = 0;
            create(argv[1]);
        }
    }
}
