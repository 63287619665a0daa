/* Inferior for the tracepoint tests: main calls record_hit() once per iteration with
 * arguments, locals, globals, a struct, an array, a pointer and a string to collect, and
 * calls other_hit() after it. Every value is derived from the iteration number, so a
 * collected value tells which hit a trace frame holds.
 *
 * Usage: traced [ITERATIONS [STOP_FILE]]
 *   ITERATIONS  number of iterations (default 10);
 *   STOP_FILE   then loop on (10 ms a round, "tick N" printed every 10 rounds) until
 *               STOP_FILE exists, so that a trace can run on while no debugger is
 *               connected.
 * Lines tagged "MARK: name" are located by the tests. */
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

struct sample {
    int id;
    short kind;
    long total;
    char label[8];
};

int counter; /* number of record_hit calls so far */
int table[8] = {10, 11, 12, 13, 14, 15, 16, 17};
int untouched = 77; /* never collected: <unavailable> in a frame */
struct sample current = {0, 5, 0, "first"};
int* cursor = &table[0];              /* walks the table */
const char* greeting = "hello trace"; /* a string to collect through its pointer */
volatile int halfway_seen;

int record_hit(int iteration, int scale) {
    int squared = iteration * iteration; /* MARK: record_first */
    int scaled = squared * scale;
    counter++;
    current.id = iteration;
    current.total += scaled;
    cursor = &table[iteration % 8];
    return scaled + squared; /* MARK: record_return */
}

int other_hit(int iteration) {
    return iteration + 1000; /* MARK: other_body */
}

/* A straight run of simple statements for while-stepping. */
int stepped(int x) {
    int a = x + 1; /* MARK: stepped_first */
    int b = a * 2;
    int c = b - 3;
    return a + b + c;
}

void halfway(void) {
    halfway_seen = 1; /* MARK: halfway_body */
}

void finished(int result) {
    halfway_seen = result; /* MARK: finished_body */
}

int main(int argc, char** argv) {
    int iterations = argc > 1 ? atoi(argv[1]) : 10;
    const char* stop_file = argc > 2 ? argv[2] : NULL;
    int result = 0;
    for (int i = 0; i < iterations || stop_file != NULL; i++) {
        if (i >= iterations) {
            if (access(stop_file, F_OK) == 0) break;
            if (i % 10 == 0) {
                printf("tick %d\n", i); /* progress a test can wait for */
                fflush(stdout);
            }
            usleep(10000);
        }
        result += record_hit(i, 3);
        if (i == iterations / 2) halfway();
        result += other_hit(i) + stepped(i);
    }
    finished(result); /* MARK: after_loop */
    printf("result=%d counter=%d\n", result, counter);
    return 0;
}
