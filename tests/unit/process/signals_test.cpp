#include "protocol/signals.hpp"
#include <catch2/catch.hpp>
#include <csignal>

// protocol/signals (gdb's numbering), tested here since it lived in process/ (its test ids kept).
using namespace tpagent::protocol;

TEST_CASE("signals travel in gdb's numbering", "[signals]") {
    CHECK(host_to_gdb_signal(SIGUSR1) == 30);
    CHECK(host_to_gdb_signal(SIGCHLD) == 20);
    CHECK(host_to_gdb_signal(SIGSEGV) == 11);
    CHECK(host_to_gdb_signal(SIGBUS) == 10);
    CHECK(host_to_gdb_signal(34) == 46); // a real-time signal
    CHECK(host_to_gdb_signal(0) == 0);
    for (int s = 1; s <= SIGRTMAX; ++s) {
        int g = host_to_gdb_signal(s);
        if (g != 143) CHECK(gdb_to_host_signal(g) == s); // every mapped signal comes back
    }
    CHECK(gdb_to_host_signal(143) == 0);
}
