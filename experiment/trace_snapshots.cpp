// See trace_snapshots.hpp.
#include "experiment/trace_snapshots.hpp"
#include "experiment/record_folder.hpp"
#include "experiment/trace_experiment.hpp"
#include "experiment/trace_file_writer.hpp"
#include "trace/recorded_status.hpp"
#include "base/system_error.hpp"
#include <cerrno>
#include <fmt/format.h>
#include <sys/stat.h>
#include <unistd.h>
#include <vector>

namespace tpagent::experiment {

namespace {
constexpr std::string_view kSnapshotPrefix = "snapshot-";
// gdb refuses a trace file's text line of 1000 characters or more (tracefile-tfile.c): the
// recorder's width keeps clear of that.
constexpr std::size_t kStatusWidth = trace::kRecordedStatusWidth;
} // namespace

Result<Snapshot> TraceSnapshots::take(TraceExperiment& experiment, std::string_view tdesc_xml,
                                      std::string_view why) {
    mkdir(options_.dir.c_str(), 0777); // one level, as tsave makes none: an error shows below
    const std::uint64_t floor =
        options_.min_free ? *options_.min_free : default_floor(options_.dir);
    if (auto under = under_floor(options_.dir, floor)) return *under;
    if (experiment.buffer().frame_count() == 0)
        return make_error(ErrorCode::NotAllowed, "the trace buffer holds no frame");
    // Copied before anything is written: the program overwrites the oldest frames first, and
    // the file's status says how many frames follow it.
    std::vector<std::uint8_t> frames;
    const auto copied = experiment.buffer().copy_frames(frames);
    protocol::TraceStatus status = experiment.trace_status();
    status.frames = copied.frames;
    sequence_ = std::max(sequence_, last_file_number(options_.dir, kSnapshotPrefix)) + 1;
    std::string note = fmt::format("snapshot {} ({}): the newest {} of the run's {} frame(s)",
                                   sequence_, why, copied.frames, status.created);
    if (copied.gone) note += fmt::format(", {} overwritten while copied", copied.gone);
    status.notes += (status.notes.empty() ? "" : "; ") + note;
    Snapshot snapshot{numbered_file_path(options_.dir, kSnapshotPrefix, sequence_), copied.frames,
                      copied.gone};
    std::string payload = protocol::encode_trace_status(status).substr(1);
    if (payload.size() > kStatusWidth) { // the run's own notes give way to the snapshot's
        status.notes = note;
        status.user.resize(std::min<std::size_t>(status.user.size(), 64));
        payload = protocol::encode_trace_status(status).substr(1);
    }
    const std::string text = trace_file_text_section(experiment, tdesc_xml, payload);
    if (auto s = write_trace_file(snapshot.path, text, frames, options_.confine_to); !s)
        return s.error();
    sync_dir(options_.dir);
    ++written_;
    files_.push_back(snapshot.path);
    while (options_.keep_files != 0 && files_.size() > options_.keep_files) {
        if (unlink(files_.front().c_str()) != 0 && errno != ENOENT)
            snapshot.warning = file_system_error("cannot remove", files_.front()).text;
        files_.pop_front();
        ++removed_;
    }
    return snapshot;
}

} // namespace tpagent::experiment
