// What the printers share: which frames and registers to show, values as hex text, names
// of variables and tracepoints.
#pragma once
#include "tools/tpdump/options.hpp"
#include "tools/tracefile/trace_file.hpp"
#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <vector>

namespace tpagent::tpdump {

// The frames the options select, in file order.
std::vector<const tracefile::Frame*> selected_frames(const tracefile::TraceFile& file,
                                                     const Options& options);

// Register value as "0x" + hex digits, most significant first (the bytes are little-endian).
std::string register_hex(std::span<const std::uint8_t> bytes);
bool all_zero(std::span<const std::uint8_t> bytes);

struct ShownRegister {
    const tracefile::RegisterInfo* info;
    std::span<const std::uint8_t> bytes;
};
// The registers of `block` to show. `text`: by default skip wide registers that are zero.
std::vector<ShownRegister> shown_registers(const tracefile::TraceFile& file,
                                           std::span<const std::uint8_t> block,
                                           const Options& options, bool text);

// "$name" of a variable, or "#<number>" when the file does not define it.
std::string variable_name(const tracefile::TraceFile& file, std::uint32_t number);
// The thread that collected `frame`, when the file tells: the value of `$trace_thread` (the
// collecting thread's id, when the tracepoint collected that variable), else the thread's TLS
// base from the frame's registers (fs_base on x86-64, tpidr on arm64: unique per live thread
// of a process); and its process, from `$trace_pid` (a trace that followed forks holds frames
// of several processes, whose threads may have the same TLS bases).
struct FrameThread {
    std::uint64_t id = 0;
    bool from_tls_base = false; // id is a TLS base address, not a thread id
    std::uint64_t process = 0;  // 0: not collected
};
// The frame's `$trace_pid`, when its tracepoint collected it; else 0.
std::uint64_t frame_process(const tracefile::TraceFile& file, const tracefile::Frame& frame);
std::optional<FrameThread> frame_thread(const tracefile::TraceFile& file,
                                        const tracefile::Frame& frame);
// "thread 1234", or "thread @0x7f..." when only the TLS base is known; "process 1200 thread
// 1234" when the process is known.
std::string thread_label(const FrameThread& thread);

// The `at` source string of a tracepoint (its location as the user typed it), if present.
std::string tracepoint_location(const tracefile::TraceFile& file, std::uint32_t number);

} // namespace tpagent::tpdump
