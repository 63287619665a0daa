#include "process/linux/terminal.hpp"

#include <csignal>
#include <cstdlib>
#include <spdlog/spdlog.h>
#include <unistd.h>

namespace tpagent::process::terminal {

namespace {

// gdbserver's choice of descriptor: stdin may be the protocol (`-`) or /dev/null.
constexpr int kTerminal = STDERR_FILENO;
pid_t g_own_group = -1; // tpagent's group, once it has handed the terminal to a program

} // namespace

void take_back() {
    if (g_own_group > 0) tcsetpgrp(kTerminal, g_own_group);
}

void give_to(pid_t pgid) {
    if (g_own_group < 0) {
        if (!isatty(kTerminal) || tcgetpgrp(kTerminal) != getpgrp()) return;
        g_own_group = getpgrp();
        // In the background from now on, tpagent still writes to the terminal, and hands it
        // to the next program: neither may stop it.
        std::signal(SIGTTOU, SIG_IGN);
        std::signal(SIGTTIN, SIG_IGN);
        std::atexit(take_back);
    }
    if (tcsetpgrp(kTerminal, pgid) != 0) spdlog::debug("terminal not handed to {}", pgid);
}

} // namespace tpagent::process::terminal
