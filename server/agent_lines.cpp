// The lines of agent-style dprintfs that run in the program (experiment/inproc_breakpoints.hpp):
// the program's threads leave them in the shared buffer's ring, and tpagent prints them.
#include "server/server.hpp"
#include "base/whole_lines.hpp"
#include <chrono>
#include <cstdio>
#include <string>

namespace tpagent::server {

namespace {
// How often the ring is read while a dprintf may print: a program printing more than its
// inproc::kPrintSlots lines in that time stops for tpagent to make room (a trap, at once).
constexpr std::chrono::milliseconds kAgentLinesInterval{20};
} // namespace

void Server::write_command_output(std::string_view text) const {
    // As gdbserver: standard output, standard error when that carries the protocol.
    std::FILE* out = stdio_transport() ? stderr : stdout;
    // The program shares it: whole lines per write, none inside the program's own.
    std::fflush(out); // What stdio holds goes first.
    write_whole_lines(fileno(out), text);
}

bool Server::take_agent_lines() {
    // Gathered first: few writes, and a program printing as fast as it can waits on them.
    std::string lines;
    const bool more = experiment_.inproc_breakpoints().take_printed(
        [&lines](std::string_view text) { lines.append(text); });
    if (!lines.empty()) write_command_output(lines);
    return more;
}

void Server::watch_agent_lines() {
    if (agent_lines_armed_ || !take_agent_lines()) return;
    agent_lines_armed_ = true;
    agent_lines_timer_.expires_after(kAgentLinesInterval);
    agent_lines_timer_.async_wait([this](const boost::system::error_code& ec) {
        agent_lines_armed_ = false;
        if (!ec) watch_agent_lines();
    });
}

} // namespace tpagent::server
