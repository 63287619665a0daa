// The fuzz targets' check: a condition that does not hold aborts with a message, which
// libFuzzer reports as a crash with the input that caused it.
#pragma once
#include <cstdio>
#include <cstdlib>

#define INVARIANT(cond)                                                                            \
    do {                                                                                           \
        if (!(cond)) {                                                                             \
            std::fprintf(stderr, "invariant failed: %s (%s:%d)\n", #cond, __FILE__, __LINE__);     \
            std::abort();                                                                          \
        }                                                                                          \
    } while (0)
