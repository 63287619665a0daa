/* Inferior for the single-threaded tests: a struct, a call chain, globals to inspect.
 * Lines tagged "MARK: name" are located by the tests, so they survive edits. */
#include <stdio.h>

struct point {
    int x;
    int y;
};

int exit_code = 3;              /* tests change it with "set var" and check the exit code */
int squares[4] = {1, 4, 9, 16}; /* read with "x/4dw" */
int watched;                    /* written three times: watchpoint target */

int square(int v) {
    int r = v * v; /* MARK: square_body */
    return r;
}

int sum_squares(int n) {
    int total = 0;               /* MARK: sum_first */
    for (int i = 1; i <= n; i++) /* MARK: sum_loop */
        total += square(i);      /* MARK: sum_call */
    return total;                /* MARK: sum_return */
}

int main(void) {
    struct point p = {3, 4};
    for (int i = 0; i < 3; i++) /* MARK: watch_loop */
        watched += 10;          /* MARK: watch_write */
    int s = sum_squares(p.x);   /* MARK: main_call */
    printf("sum=%d\n", s);
    return exit_code; /* MARK: main_return */
}
