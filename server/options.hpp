// Command line, in gdbserver's shape:
//   tpagent [OPTIONS] COMM PROG [ARGS...]
//   tpagent [OPTIONS] --attach COMM PID
//   tpagent [OPTIONS] --multi COMM
// Options may come after COMM too (before PROG or PID), `--attach` among them, as gdbserver
// takes `COMM --attach PID`.
#pragma once
#include "base/result.hpp"
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <sys/types.h>
#include <vector>

namespace tpagent::server {

// What --disable-packet=LIST turned off, as gdbserver's testsuite uses it to check gdb
// without them: those packets get the empty reply, and stop replies leave out what is off.
struct DisabledPackets {
    bool vcont = false;          // vCont, vCont?
    bool stop_thread = false;    // Tthread: no "thread:" in a T stop reply
    bool current_thread = false; // qC
    bool thread_list = false;    // qfThreadInfo, qsThreadInfo
    bool stop_registers = false; // T: stop replies are plain S replies

    // A packet whose name is off.
    bool refuses(std::string_view name) const;
};

struct ServerOptions {
    std::string comm;                 // HOST:PORT, :PORT, "-" (stdio) or a tty device path
    std::vector<std::string> program; // PROG ARGS...
    std::vector<std::string> wrapper; // --wrapper W ARGS --
    std::optional<pid_t> attach_pid;
    bool multi = false;
    bool once = false;
    bool debug = false;
    bool remote_debug = false;      // --remote-debug: the packets alone
    bool debug_timestamps = true;   // --debug-format=none turns them off
    bool relocate_with_gdb = false; // fast tracepoints: gdb relocates (qRelocInsn)
    bool inject = true; // load the in-process agent into a program without it (--no-inject)
    bool trace_follow_fork = false; // children forked during a run are traced (--trace-follow-fork)
    bool disable_randomization = true;
    std::optional<std::string> save_dir; // QTSave writes only here when given
    // The flight recorder (experiment/trace_recorder.hpp): every run's frames into rotating
    // files in record_dir.
    std::optional<std::string> record_dir;
    // Or to a host (server/record_stream.hpp): the port, as "[ADDR]:PORT".
    std::optional<std::string> record_host;
    std::uint64_t record_backlog_bytes = 32u << 20;
    std::uint64_t record_file_bytes = 64u << 20;
    std::uint32_t record_files = 0;               // files kept; 0: all
    std::uint32_t record_seconds = 0;             // a file ends after this long; 0: never
    std::optional<std::uint64_t> record_min_free; // nothing: 1/20 of the disk; snapshots too
    // Snapshots of the buffer (experiment/trace_snapshots.hpp) into snapshot_dir.
    std::optional<std::string> snapshot_dir;
    std::uint32_t snapshot_files = 0;      // kept; 0: all
    std::vector<std::string> allow;        // --allow lists: who may connect over TCP (all if none)
    std::optional<std::string> hostio_dir; // vFile names resolve inside it, as the root
    std::optional<std::string>
        inproc;        // --inproc[=LIB]: preload the in-process agent ("" = default)
    unsigned baud = 0; // serial line speed; 0 = leave as is
    DisabledPackets disabled;
    bool show_help = false;
    bool show_version = false;
    bool show_disableable = false; // --disable-packet alone
};

Result<ServerOptions> parse_options(int argc, char** argv);
// What --disable-packet can turn off, for --disable-packet alone and its errors.
std::string disableable_text();
// N, NK, NM or NG (powers of 1024), at most 1 TiB.
std::optional<std::uint64_t> parse_byte_size(std::string_view s);
// N, Ns, Nm or Nh, in seconds; at most a year.
std::optional<std::uint32_t> parse_duration(std::string_view s);
std::string usage_text();

// --save-dir must name a directory tpagent can write in, checked at start rather than at the
// first save. Gives it as an absolute path, so that messages say where files go.
Result<std::string> usable_save_dir(const std::string& dir);

} // namespace tpagent::server
