/* The program execs.c runs in the exec-event tests: a function of its own to break in, and
 * an exit code of its own (3). */
#include <stdio.h>

int target_only(int n) {
    return n + 2;
}

int main(void) {
    int code = target_only(1);
    printf("exec_target: %d\n", code);
    return code;
}
