#pragma once
// What tpagent writes to stderr for debugging, as gdbserver's switches and monitor commands
// shape it: `--debug` / `monitor set debug` for everything (packets, ptrace events, tracing),
// `--remote-debug` / `monitor set remote-debug` for the packets alone, and
// `--debug-format` / `monitor set debug-format` for the timestamps on each line.
#include <spdlog/logger.h>
#include <string>
#include <string_view>

namespace tpagent::server::debug_output {

// stderr, warnings always; the rest as the switches say. Called once, at start-up.
void start(bool debug, bool remote_debug, bool timestamps);

void set_debug(bool on);
void set_remote_debug(bool on);
void set_timestamps(bool on);

// A line on tpagent's stderr, as gdbserver's own lines are (not the log's): flushed at once.
void say(const std::string& line);

// The packets gdb and tpagent exchange: logged at debug level when either switch is on.
spdlog::logger& packets();

// `set debug-format OPTIONS` (all, none, timestamp; comma-separated), applied in order up to
// an unknown one: what to tell gdb, and whether every option was known.
struct FormatAnswer {
    std::string said;
    bool known = true;
};
FormatAnswer set_format(std::string_view options);

} // namespace tpagent::server::debug_output
