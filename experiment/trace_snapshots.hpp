// Snapshots (the flight recorder's trigger): the frames in the trace buffer now — with a
// circular buffer, the last stretch of the run before the trigger — written into a new trace
// file, snapshot-NNNNNN.tf in a folder on the target, while the trace goes on. The frames are
// copied first (a frame the program overwrites meanwhile is left out and counted, never torn),
// then written beside their name and renamed into place, so a snapshot is whole or absent.
// Each stands alone: gdb's `target tfile` and tpdump open it; its status counts its frames and
// its note says what triggered it.
#pragma once
#include "base/result.hpp"
#include <cstdint>
#include <deque>
#include <optional>
#include <string>
#include <string_view>

namespace tpagent::experiment {

class TraceExperiment;

struct SnapshotOptions {
    std::string dir;
    std::uint32_t keep_files = 0; // the newest N of this tpagent's snapshots kept; 0: all
    // None is written while the disk has less free than this; nothing: 1/20 of its size.
    std::optional<std::uint64_t> min_free;
    // --save-dir: no symbolic link in the path may lead out of it (as for tsave -r).
    std::optional<std::string> confine_to;
};

struct Snapshot {
    std::string path;
    std::uint64_t frames = 0; // in the file
    std::uint64_t gone = 0;   // overwritten before the copy reached them
    std::string warning;      // what went wrong after it was written (an old one not removed)
};

class TraceSnapshots {
  public:
    explicit TraceSnapshots(SnapshotOptions options) : options_(std::move(options)) {}

    // The buffer's frames into the next file; `why` goes into its note ("monitor snapshot").
    Result<Snapshot> take(TraceExperiment& experiment, std::string_view tdesc_xml,
                          std::string_view why);

    const SnapshotOptions& options() const { return options_; }
    std::uint64_t written() const { return written_; }
    std::uint64_t removed() const { return removed_; }
    // The newest snapshot written, if any.
    const std::string* last() const { return files_.empty() ? nullptr : &files_.back(); }

  private:
    SnapshotOptions options_;
    std::uint64_t sequence_ = 0; // the last file's number
    std::uint64_t written_ = 0, removed_ = 0;
    std::deque<std::string> files_; // this tpagent's, oldest first
};

} // namespace tpagent::experiment
