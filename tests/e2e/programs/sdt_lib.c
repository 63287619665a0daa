/* The library sdt_markers.c loads with dlopen(): lib_step(n) has the marker
 * sdt_lib:lib_step, alone on its line (so that the line's first instruction is the
 * marker's), with the argument n, and returns n * 2. */
#include <sys/sdt.h>

int lib_calls;

int lib_step(int n) {
    lib_calls++;
    STAP_PROBE1(sdt_lib, lib_step, n); /* MARK: lib_step */
    return n * 2;
}
