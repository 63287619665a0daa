// Recording a running trace into rotating trace files in a folder on the target (the flight
// recorder, --record): each poll moves the frames collected since the last one, in collection
// order, from the trace buffer into the current file; a file that reaches its size is ended
// (the frames' end marker, fsync) and the next begins; only the newest `keep_files` are kept.
// Each file stands alone: it starts with the whole text section (tracepoints, variables,
// status), so gdb's `target tfile` and tpdump open any of them.
//
// A frame the buffer lost before a poll reached it (circular mode reusing its space) is counted,
// never silent: collected = recorded + lost, across every file.
#pragma once
#include "base/result.hpp"
#include <cstdint>
#include <deque>
#include <string>
#include <string_view>
#include <vector>

namespace tpagent::experiment {

class TraceExperiment;

struct RecordOptions {
    std::string dir;
    std::uint64_t file_bytes = 64u << 20; // a file is ended once it holds this much
    std::uint32_t keep_files = 0;         // 0: all
};

struct RecordTotals {
    std::uint64_t frames = 0;        // written into files
    std::uint64_t lost = 0;          // gone from the buffer before a poll reached them
    std::uint64_t files = 0;         // begun this run
    std::uint64_t files_removed = 0; // past keep_files
};

class TraceRecorder {
  public:
    explicit TraceRecorder(RecordOptions options) : options_(std::move(options)) {}
    TraceRecorder(const TraceRecorder&) = delete;
    TraceRecorder& operator=(const TraceRecorder&) = delete;
    ~TraceRecorder();

    // A new run: its first file, from the experiment's buffer's next frame on.
    Status start(TraceExperiment& experiment, std::string_view tdesc_xml);
    // The frames collected since the last poll, into the files.
    Status poll(TraceExperiment& experiment);
    // The last poll, then the current file ended.
    Status finish(TraceExperiment& experiment);

    const RecordTotals& totals() const { return totals_; }
    // The files of this run still on disk, oldest first.
    const std::deque<std::string>& files() const { return files_; }

  private:
    Status begin_file(TraceExperiment& experiment);
    Status end_file();
    Status write(const std::uint8_t* bytes, std::size_t size);

    RecordOptions options_;
    std::string tdesc_;
    int fd_ = -1;
    std::uint64_t file_written_ = 0; // bytes of the current file
    std::uint64_t frames_in_file_ = 0;
    std::uint64_t next_ = 0;     // the creation index of the next frame to record
    std::uint64_t sequence_ = 0; // files begun, ever: their names
    RecordTotals totals_;
    std::deque<std::string> files_;
    std::vector<std::uint8_t> frame_;
};

} // namespace tpagent::experiment
