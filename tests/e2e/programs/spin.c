/* Inferior that never stops by itself: creates READY_FILE (argv[1]) then spins. */
#include <stdio.h>

volatile unsigned long spins;

int main(int argc, char **argv)
{
    if (argc > 1) {
        FILE *ready = fopen(argv[1], "w");
        if (ready != NULL)
            fclose(ready);
    }
    for (;;)
        spins++; /* MARK: spin */
}
