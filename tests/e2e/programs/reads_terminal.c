/* Reads lines from its terminal and says each back, until "end"; then waits to be
 * interrupted. For the test that tpagent hands its terminal to the programs it starts. */
#include <stdio.h>
#include <string.h>
#include <unistd.h>

volatile int lines_read;

int main(void) {
    char line[256];
    while (fgets(line, sizeof line, stdin)) {
        lines_read++;
        printf("got %s", line);
        fflush(stdout);
        if (strcmp(line, "end\n") == 0) break;
    }
    for (;;)
        pause(); /* a signal, or gdb, ends it */
}
