/* Exits with the number in the environment variable E2E_EXIT (1 when it is unset):
 * shows whether a --wrapper set up the environment. */
#include <stdlib.h>

int main(void) {
    const char* code = getenv("E2E_EXIT");
    return code != NULL ? atoi(code) : 1;
}
