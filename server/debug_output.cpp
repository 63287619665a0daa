#include "server/debug_output.hpp"

#include "protocol/hex.hpp"
#include <cstdio>
#include <fmt/format.h>
#include <memory>
#include <spdlog/sinks/stdout_sinks.h>
#include <spdlog/spdlog.h>

namespace tpagent::server::debug_output {

namespace {

constexpr const char* kTimestamped = "[%H:%M:%S.%f] %v";
constexpr const char* kPlain = "%v";

struct Switches {
    bool debug = false;
    bool remote_debug = false;
};

Switches& switches() {
    static Switches s;
    return s;
}

// Shares the default logger's sinks, so both go to the same place in order.
std::shared_ptr<spdlog::logger>& packet_logger() {
    static std::shared_ptr<spdlog::logger> logger = [] {
        const auto& sinks = spdlog::default_logger_raw()->sinks();
        auto made = std::make_shared<spdlog::logger>("packets", sinks.begin(), sinks.end());
        made->set_level(spdlog::level::warn);
        return made;
    }();
    return logger;
}

void apply() {
    const Switches& s = switches();
    spdlog::set_level(s.debug ? spdlog::level::debug : spdlog::level::warn);
    packet_logger()->set_level(s.debug || s.remote_debug ? spdlog::level::debug
                                                         : spdlog::level::warn);
}

} // namespace

void start(bool debug, bool remote_debug, bool timestamps) {
    auto logger = spdlog::stderr_logger_st("tpagent");
    spdlog::set_default_logger(logger);
    switches() = {debug, remote_debug};
    set_timestamps(timestamps);
    apply();
}

void set_debug(bool on) {
    switches().debug = on;
    apply();
}

void set_remote_debug(bool on) {
    switches().remote_debug = on;
    apply();
}

void set_timestamps(bool on) {
    spdlog::default_logger_raw()->set_pattern(on ? kTimestamped : kPlain);
    packet_logger()->set_pattern(on ? kTimestamped : kPlain);
}

spdlog::logger& packets() {
    return *packet_logger();
}

FormatAnswer set_format(std::string_view options) {
    // gdbserver's words, one line per option, in order; an unknown one ends the list.
    std::string said;
    for (std::string_view option : protocol::split(options, ',')) {
        if (option == "all") {
            set_timestamps(true);
            said += "All extra debug format options enabled.\n";
        } else if (option == "none") {
            set_timestamps(false);
            said += "All extra debug format options disabled.\n";
        } else if (option == "timestamp") {
            set_timestamps(true);
            said += "Timestamps will be added to debug output.\n";
        } else {
            return {said + fmt::format("Unknown debug-format argument: \"{}\"\n", option), false};
        }
    }
    return {said, true};
}

void say(const std::string& line) {
    fmt::print(stderr, "{}\n", line);
    std::fflush(stderr);
}

} // namespace tpagent::server::debug_output
