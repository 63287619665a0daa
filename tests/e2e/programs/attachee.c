/* Inferior for --attach: loops until a debugger sets stop_now, then writes a report.
 * Usage: attachee READY_FILE REPORT_FILE. READY_FILE appears once the loop runs. */
#include <stdio.h>
#include <unistd.h>

volatile int stop_now;
int magic = 4660;
unsigned long loops;

int main(int argc, char** argv) {
    if (argc != 3) return 2;
    FILE* ready = fopen(argv[1], "w");
    if (ready == NULL) return 2;
    fclose(ready);
    while (!stop_now) {
        if (++loops > 6000) /* a minute: never outlive a broken test */
            return 4;
        usleep(10000); /* MARK: loop */
    }
    FILE* report = fopen(argv[2], "w");
    if (report == NULL) return 2;
    fprintf(report, "stopped after %lu loops, magic=%d\n", loops, magic);
    fclose(report);
    return 0;
}
