// tpagent: a GDB remote-protocol tracepoint agent.
#include "base/asio.hpp"
#include "server/options.hpp"
#include "server/debug_output.hpp"
#include "server/server.hpp"
#include "process/linux/code_guard.hpp"
#include <csignal>
#include <cstdio>
#include <fmt/format.h>
#include <spdlog/sinks/stdout_sinks.h>
#include <spdlog/spdlog.h>

namespace {

int run(int argc, char** argv) {
    using namespace tpagent::server;
    auto opts = parse_options(argc, argv);
    if (!opts) {
        fmt::print(stderr, "tpagent: {}\n{}", opts.error().text, usage_text());
        return 2;
    }
    if (opts->show_help) {
        fmt::print("{}", usage_text());
        return 0;
    }
    if (opts->show_disableable) {
        fmt::print("{}", disableable_text());
        return 0;
    }
    if (opts->show_version) {
        fmt::print("tpagent {}\n", TPAGENT_VERSION);
        return 0;
    }
    debug_output::start(opts->debug, opts->remote_debug, opts->debug_timestamps);
    // A vanished gdb must show up as a write error, not kill us; so must a file size limit
    // (tsave -r).
    std::signal(SIGPIPE, SIG_IGN);
    std::signal(SIGXFSZ, SIG_IGN);
    // Before any program is started or attached: if tpagent is killed, the programs it traced
    // get their code back.
    tpagent::process::code_guard::start();

    try {
        boost::asio::io_context io;
        Server server(io, std::move(*opts));
        return server.run();
    } catch (const std::exception& e) {
        // The event loop reports I/O failures as exceptions: say what failed and exit cleanly.
        fmt::print(stderr, "tpagent: {}\nExiting\n", e.what());
        return 1;
    }
}

} // namespace

int main(int argc, char** argv) {
    try {
        return run(argc, argv);
    } catch (const std::exception& e) { // before the event loop (out of memory, stdout gone)
        std::fprintf(stderr, "tpagent: %s\n", e.what());
        return 1;
    }
}
