#include "protocol/signals.hpp"
#include <csignal>
#include <utility>

namespace tpagent::protocol {

namespace {
// {host, gdb} for the classic signals whose numbers differ or coincide.
constexpr std::pair<int, int> kClassic[] = {
    {SIGHUP, 1},     {SIGINT, 2},   {SIGQUIT, 3},   {SIGILL, 4},   {SIGTRAP, 5},  {SIGABRT, 6},
    {SIGBUS, 10},    {SIGFPE, 8},   {SIGKILL, 9},   {SIGUSR1, 30}, {SIGSEGV, 11}, {SIGUSR2, 31},
    {SIGPIPE, 13},   {SIGALRM, 14}, {SIGTERM, 15},  {SIGCHLD, 20}, {SIGCONT, 19}, {SIGSTOP, 17},
    {SIGTSTP, 18},   {SIGTTIN, 21}, {SIGTTOU, 22},  {SIGURG, 16},  {SIGXCPU, 24}, {SIGXFSZ, 25},
    {SIGVTALRM, 26}, {SIGPROF, 27}, {SIGWINCH, 28}, {SIGIO, 23},   {SIGPWR, 32},  {SIGSYS, 12},
};
constexpr int kGdbUnknown = 143;

// Real-time signals: host 32 -> gdb 77, 33..63 -> 45..75, 64..127 -> 78..141.
int realtime_to_gdb(int s) {
    if (s == 32) return 77;
    if (s >= 33 && s <= 63) return s - 33 + 45;
    if (s >= 64 && s <= 127) return s - 64 + 78;
    return kGdbUnknown;
}
} // namespace

int host_to_gdb_signal(int host) {
    if (host == 0) return 0;
    for (auto [h, g] : kClassic)
        if (h == host) return g;
    return host >= 32 ? realtime_to_gdb(host) : kGdbUnknown;
}

int gdb_to_host_signal(int gdb) {
    if (gdb == 0) return 0;
    for (auto [h, g] : kClassic)
        if (g == gdb) return h;
    int host = 0;
    if (gdb == 77)
        host = 32;
    else if (gdb >= 45 && gdb <= 75)
        host = gdb - 45 + 33;
    else if (gdb >= 78 && gdb <= 141)
        host = gdb - 78 + 64;
    return host <= SIGRTMAX ? host : 0;
}

} // namespace tpagent::protocol
