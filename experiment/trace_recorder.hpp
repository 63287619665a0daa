// Recording a running trace into rotating trace files in a folder on the target (the flight
// recorder, --record): each poll moves the frames collected since the last one, in collection
// order, from the trace buffer into the current file; a file that reaches its size is ended
// (the frames' end marker, its status restated, fsync) and the next begins; only the newest
// `keep_files` are kept. Each file stands alone: it starts with the whole text section
// (tracepoints, variables, status), so gdb's `target tfile` and tpdump open any of them, and
// its status (trace/recorded_status.hpp) says which of the run's frames it holds and how many
// were lost before its end. The files themselves are made by a RecordSink
// (experiment/record_sink.hpp): a folder on the target, or a stream to a host. While the sink
// is backlogged (a host slow or away), frames wait in the trace buffer; what overflows it then
// is counted by the buffer (not collected, or lost when a circular buffer reuses it).
//
// No frame is lost unseen: collected = recorded + lost + unwritten, across every file. A frame
// the buffer lost before a poll reached it (reused) is `lost`; one that could not be written
// (the disk full or refusing, or its free space under the floor) is `unwritten`, and the
// recording tries again a second later with a new file. Either way the buffer goes on.
#pragma once
#include "experiment/record_sink.hpp"
#include "base/result.hpp"
#include <chrono>
#include <cstdint>
#include <deque>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace tpagent::experiment {

class TraceExperiment;

struct RecordOptions {
    std::string dir;
    std::uint64_t file_bytes = 64u << 20; // a file is ended once it holds this much
    std::uint32_t keep_files = 0;         // 0: all
    // No frame is written while the disk has less free than this; nothing: 1/20 of its size.
    std::optional<std::uint64_t> min_free;
    // A file is also ended once it has been written this long, if it holds a frame; 0: never.
    std::chrono::seconds file_time{0};
};

struct RecordTotals {
    std::uint64_t frames = 0;        // written into files
    std::uint64_t lost = 0;          // gone from the buffer before a poll reached them
    std::uint64_t unwritten = 0;     // taken from the buffer, but the disk refused them
    std::uint64_t files = 0;         // begun this run
    std::uint64_t files_removed = 0; // past keep_files
};

class TraceRecorder {
  public:
    // Into files in options.dir (FolderSink).
    explicit TraceRecorder(RecordOptions options);
    // Into files `sink` makes (it outlives this run's recording: a stream goes on across runs).
    TraceRecorder(RecordOptions options, std::shared_ptr<RecordSink> sink);
    TraceRecorder(const TraceRecorder&) = delete;
    TraceRecorder& operator=(const TraceRecorder&) = delete;
    ~TraceRecorder();

    // A new run: its first file, from the experiment's buffer's next frame on.
    void start(TraceExperiment& experiment, std::string_view tdesc_xml);
    // The frames collected since the last poll, into the files.
    void poll(TraceExperiment& experiment);
    // The last poll, then the current file ended.
    void finish(TraceExperiment& experiment);

    const RecordTotals& totals() const { return totals_; }
    // The free space under which no frame is written (RecordOptions::min_free, worked out).
    std::uint64_t floor() const { return floor_; }
    // Why frames are not being written now (the disk's error, the floor); empty while they are.
    const std::string& refusal() const { return refusal_; }
    // The files of this run still on disk, oldest first.
    std::vector<std::string> files() const;

  private:
    Status begin_file(TraceExperiment& experiment);
    Status end_file(TraceExperiment& experiment);
    Status write(const std::uint8_t* bytes, std::size_t size);
    // The batch into the file: its frames recorded, or, if the disk refuses, not written.
    Status flush();
    // A file to write into, or why there is none (refusal_ set, retried a second later).
    bool writable(TraceExperiment& experiment);
    void refuse(TraceExperiment& experiment, const Error& why);
    std::string status_payload(TraceExperiment& experiment) const;

    RecordOptions options_;
    std::shared_ptr<RecordSink> sink_;
    std::string tdesc_;
    std::uint64_t status_at_ = 0;    // the status line's payload in the current file
    std::uint64_t file_written_ = 0; // bytes of the current file
    std::uint64_t frames_in_file_ = 0;
    std::uint64_t first_in_file_ = 0; // the run's index of its first frame
    std::chrono::steady_clock::time_point file_began_{};
    std::uint64_t next_ = 0; // the run's index of the next frame handed out
    std::uint64_t discards_at_start_ = 0;
    std::uint64_t sequence_ = 0; // files begun, ever: their names
    std::uint64_t floor_ = 0;
    bool started_ = false;
    bool finishing_ = false; // the last poll: frames taken even if the sink is backlogged
    std::string refusal_;
    std::chrono::steady_clock::time_point retry_at_{};
    RecordTotals totals_;
    std::deque<std::uint64_t> files_; // their numbers
    std::vector<std::uint8_t> batch_; // whole frames not written yet
    std::uint64_t batch_frames_ = 0;
};

// The newest trace-NNNNNN.tf in `dir`, sealed if a cut left it without its end (tpagent killed
// while it recorded): its name and what was done, or nothing if the folder has no such file.
struct SealedRecording {
    std::string path;
    bool was_sealed = false;
    std::uint64_t frames = 0, cut_bytes = 0;
};
Result<std::optional<SealedRecording>> seal_newest_recording(const std::string& dir);

} // namespace tpagent::experiment
