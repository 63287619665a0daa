/* Inferior for make_tracefiles.sh: a loop calling a function whose arguments, globals and
   pointed-to memory the tracepoints collect. */
#include <string.h>

int glob = 100;
long counters[8] = {10, 11, 12, 13, 14, 15, 16, 17};
char message[16] = "hello tracefile";

struct point {
    long x;
    long y;
};
struct point origin = {3, 4};

__attribute__((noinline)) long work(int step, long* slot) {
    glob += step;
    *slot += step * 2;
    origin.x += 1;
    return *slot + glob;
}

__attribute__((noinline)) void finish(void) {
    memset(message, 'x', 4);
}

int main(void) {
    long total = 0;
    for (int i = 0; i < 5; i++)
        total += work(i, &counters[i]);
    finish();
    return (int)(total & 0x7f);
}
