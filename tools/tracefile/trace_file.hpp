// A trace file (gdb's `tsave`, tpagent's `tsave -r`) read into memory and checked:
//   header      "\x7fTRACE0\n"
//   text lines  `R <hex size>`, `status <qTStatus payload>`, `tp <qTfP piece>`,
//               `tsv <num>:<value>:<builtin>:<hexname>`, `tdesc <xml line>`; others ignored
//   ""          an empty line ends the text
//   frames      the trace-frame format of trace/frame_format.hpp (plus `S` static-data
//               blocks), until a frame with tracepoint number 0
// Every length is checked against the bytes that are there; a file that does not follow
// the format gives an Error whose text starts with "offset N:" (N = byte offset in the file).
// Damage in the frame section (a file cut short, a bad frame) still gives the TraceFile,
// with the frames before the damage and the error as damage().
#pragma once
#include "trace/trace_frame.hpp"
#include "trace/tracepoint.hpp"
#include "base/result.hpp"
#include "tools/tracefile/register_layout.hpp"
#include "tools/tracefile/trace_status.hpp"
#include <cstddef>
#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <vector>

namespace tpagent::tracefile {

inline constexpr std::string_view kMagic{"\x7fTRACE0\n", 8};

// A `tsv` line.
struct TraceVariable {
    std::uint32_t number = 0;
    std::int64_t initial = 0;
    bool builtin = false;
    std::string name; // without '$'
};

// One stored frame. Block data point into the TraceFile's bytes.
struct Frame {
    std::size_t number = 0; // position in the file, first = 0 (gdb's tfind numbering)
    std::size_t offset = 0; // of the frame header in the file
    std::uint16_t tracepoint = 0;
    std::span<const std::uint8_t> bytes; // header and data
    // R, M, V as in agent/trace; 'S' (static tracepoint data): `data` holds the text.
    std::vector<trace::FrameBlock> blocks;

    // The last R block, if registers were collected.
    std::optional<std::span<const std::uint8_t>> registers() const;
    // The last collected value of variable `number`.
    std::optional<std::int64_t> variable(std::uint32_t number) const;
};

class TraceFile {
  public:
    TraceFile(TraceFile&&) = default;
    TraceFile& operator=(TraceFile&&) = default;
    // Frames point into bytes_; a copy would point into the original.
    TraceFile(const TraceFile&) = delete;
    TraceFile& operator=(const TraceFile&) = delete;

    std::size_t file_size() const { return bytes_.size(); }
    // The whole file, as read; frames and blocks point into it.
    std::span<const std::uint8_t> bytes() const { return bytes_; }
    // The `R` line, or the target description's block size when the line is missing.
    std::optional<std::size_t> register_block_size() const { return register_block_size_; }
    const std::optional<TraceStatus>& status() const { return status_; }
    // In file order; V pieces filled in the counters.
    const std::vector<trace::Tracepoint>& tracepoints() const { return tracepoints_; }
    const std::vector<TraceVariable>& variables() const { return variables_; }
    // The concatenated `tdesc` lines (each followed by '\n'); empty if there were none.
    const std::string& target_description() const { return target_description_; }
    // From the target description; nothing if the file has none.
    const std::optional<RegisterLayout>& register_layout() const { return layout_; }
    std::size_t frame_section_offset() const { return frame_section_offset_; }
    // Every frame, or with damage() those before it.
    const std::vector<Frame>& frames() const { return frames_; }
    // What stopped the reading of the frame section early ("offset N: ..."); nothing for a
    // whole file.
    const std::optional<Error>& damage() const { return damage_; }

    // The first location of tracepoint `number`, if defined in the file.
    const trace::Tracepoint* find_tracepoint(std::uint32_t number) const;
    const TraceVariable* find_variable(std::uint32_t number) const;
    // The number of the built-in `trace_timestamp` variable, if the file defines it.
    std::optional<std::uint32_t> timestamp_variable() const;
    // The frame's pc: the pc register of its R block, else its tracepoint's address when
    // that tracepoint has a single location (what gdbserver reports for such frames).
    std::optional<std::uint64_t> frame_pc(const Frame& frame) const;

  private:
    friend class TraceFileParser;
    TraceFile() = default;

    std::vector<std::uint8_t> bytes_;
    std::optional<std::size_t> register_block_size_;
    std::optional<TraceStatus> status_;
    std::vector<trace::Tracepoint> tracepoints_;
    std::vector<TraceVariable> variables_;
    std::string target_description_;
    std::optional<RegisterLayout> layout_;
    std::size_t frame_section_offset_ = 0;
    std::vector<Frame> frames_;
    std::optional<Error> damage_;
};

// Parses a file held in memory (takes the bytes; frames point into them). An Error when
// the header or the text section is bad: nothing in the file can be trusted then.
Result<TraceFile> parse_trace_file(std::vector<std::uint8_t> bytes);
// Reads and parses the file at `path`.
Result<TraceFile> read_trace_file(const std::string& path);
// A file's text section alone (tracepoints, variables, status), no frames: from the start of
// the file in `bytes`, nothing while the blank line that ends it is not there yet; from the
// file at `path`, read only as far as that line.
Result<std::optional<TraceFile>> parse_trace_file_head(std::span<const std::uint8_t> bytes);
Result<TraceFile> read_trace_file_head(const std::string& path);

} // namespace tpagent::tracefile
