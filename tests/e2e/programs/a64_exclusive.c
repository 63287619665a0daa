/* arm64 only: an atomic add by a load-exclusive/store-exclusive loop, add_exclusive(), each
 * instruction at a global label where a test puts a tracepoint. A trap or a call between the
 * load and the store clears the exclusive monitor: the store would fail at every try and the
 * loop never end. main adds 1..N to a global through it and says whether the sum is right.
 *
 * Usage: a64_exclusive [ITERATIONS]   (default 5) */
#include <stdio.h>
#include <stdlib.h>

long add_exclusive(long* p, long v);
long total;
void finished(void) {}

__asm__(".text\n"
        ".global add_exclusive\n"
        ".type add_exclusive, %function\n"
        "add_exclusive:\n"
        ".global at_load\n"
        "at_load: ldaxr x2, [x0]\n"
        ".global at_add\n"
        "at_add: add x2, x2, x1\n"
        ".global at_store\n"
        "at_store: stlxr w3, x2, [x0]\n"
        ".global at_retry\n"
        "at_retry: cbnz w3, at_load\n"
        ".global at_done\n"
        "at_done: mov x0, x2\n"
        "  ret\n"
        ".size add_exclusive, .-add_exclusive\n");

int main(int argc, char** argv) {
    long n = argc > 1 ? atol(argv[1]) : 5;
    for (long i = 1; i <= n; ++i)
        add_exclusive(&total, i);
    finished();
    printf("total=%ld %s\n", total, total == n * (n + 1) / 2 ? "right" : "wrong");
    return 0;
}
