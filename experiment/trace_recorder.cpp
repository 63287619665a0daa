// See trace_recorder.hpp.
#include "experiment/trace_recorder.hpp"
#include "experiment/trace_experiment.hpp"
#include "experiment/trace_file_writer.hpp"
#include "experiment/record_folder.hpp"
#include "trace/recorded_status.hpp"
#include "trace/trace_file_seal.hpp"
#include "trace/frame_format.hpp"
#include "base/system_error.hpp"
#include <fmt/format.h>

namespace tpagent::experiment {

namespace {
constexpr std::string_view kRecordingPrefix = "trace-";
// Frames gathered for one write(): a frame is a few KiB, a system call each would cost more
// than the rest of its way to the file.
constexpr std::size_t kBatchBytes = 1u << 20;
// A disk that refused a write is tried again this much later, not at every poll.
constexpr std::chrono::seconds kRetryInterval{1};
} // namespace

TraceRecorder::TraceRecorder(RecordOptions options)
    : options_(std::move(options)),
      sink_(std::make_shared<FolderSink>(options_.dir, std::string(kRecordingPrefix))) {}

TraceRecorder::TraceRecorder(RecordOptions options, std::shared_ptr<RecordSink> sink)
    : options_(std::move(options)), sink_(std::move(sink)) {}

TraceRecorder::~TraceRecorder() = default;

void TraceRecorder::start(TraceExperiment& experiment, std::string_view tdesc_xml) {
    if (sink_->has_current()) (void)end_file(experiment);
    tdesc_ = tdesc_xml;
    totals_ = {};
    files_.clear();
    refusal_.clear();
    retry_at_ = {};
    sink_->prepare();
    sequence_ = std::max(sequence_, sink_->last_number());
    floor_ = options_.min_free ? *options_.min_free : sink_->default_floor();
    discards_at_start_ = experiment.buffer().unrecorded_discards();
    next_ = 0;
    started_ = true;
    (void)writable(experiment);
}

void TraceRecorder::refuse(TraceExperiment& experiment, const Error& why) {
    totals_.unwritten += batch_frames_;
    batch_.clear();
    batch_frames_ = 0;
    // The file ends after its whole frames (write() cut back a frame it could not finish).
    if (sink_->has_current()) (void)end_file(experiment);
    refusal_ = why.text;
    retry_at_ = std::chrono::steady_clock::now() + kRetryInterval;
}

bool TraceRecorder::writable(TraceExperiment& experiment) {
    if (auto floor = sink_->under_floor(floor_)) {
        if (sink_->has_current() || refusal_.empty()) refuse(experiment, *floor);
        refusal_ = floor->text;
        return false;
    }
    if (sink_->has_current()) return true;
    if (!refusal_.empty() && std::chrono::steady_clock::now() < retry_at_) return false;
    if (auto s = begin_file(experiment); !s) {
        refuse(experiment, s.error());
        return false;
    }
    refusal_.clear();
    return true;
}

void TraceRecorder::poll(TraceExperiment& experiment) {
    if (!started_) return;
    auto& buffer = experiment.buffer();
    // A file that has been written long enough ends, if it holds anything.
    if (sink_->has_current() && options_.file_time.count() > 0 &&
        frames_in_file_ + batch_frames_ > 0 &&
        std::chrono::steady_clock::now() - file_began_ >= options_.file_time)
        if (auto s = end_file(experiment); !s) refuse(experiment, s.error());
    // Frames wait in the buffer until the sink has room again; the run's last ones are taken
    // all the same.
    if (sink_->backlogged() && !finishing_) {
        totals_.lost = buffer.unrecorded_discards() - discards_at_start_;
        return;
    }
    bool can_write = writable(experiment);
    buffer.record_new(
        [&](const std::vector<std::uint8_t>& frame) {
            if (can_write && frames_in_file_ + batch_frames_ > 0 &&
                file_written_ + batch_.size() + frame.size() + sizeof trace::kEndOfFrames >
                    options_.file_bytes) {
                if (auto s = end_file(experiment); !s) refuse(experiment, s.error());
                can_write = writable(experiment);
            }
            ++next_;
            if (!can_write) {
                ++totals_.unwritten; // taken all the same: the buffer goes on
                return;
            }
            if (frames_in_file_ + batch_frames_ == 0) first_in_file_ = next_ - 1;
            batch_.insert(batch_.end(), frame.begin(), frame.end());
            ++batch_frames_;
            if (batch_.size() >= kBatchBytes)
                if (auto s = flush(); !s) {
                    refuse(experiment, s.error());
                    can_write = false;
                }
        },
        [&] { return !finishing_ && sink_->backlogged(); });
    if (can_write)
        if (auto s = flush(); !s) refuse(experiment, s.error());
    // Gone before they were handed out: lost, and counted.
    totals_.lost = buffer.unrecorded_discards() - discards_at_start_;
}

void TraceRecorder::finish(TraceExperiment& experiment) {
    if (!started_) return;
    finishing_ = true;
    poll(experiment);
    finishing_ = false;
    if (auto s = end_file(experiment); !s) refusal_ = s.error().text;
    started_ = false;
}

std::string TraceRecorder::status_payload(TraceExperiment& experiment) const {
    protocol::TraceStatus status = experiment.trace_status();
    status.frames = frames_in_file_;
    const trace::RecordingFields fields{
        sequence_, first_in_file_, totals_.lost,
        experiment.dropped_fast_frames() + experiment.dropped_trap_frames(), totals_.unwritten};
    const std::string frames =
        frames_in_file_ ? fmt::format("{} to {}", fields.first, fields.first + frames_in_file_ - 1)
                        : fmt::format("from {}", fields.first);
    const std::string note =
        fmt::format("recorded file {}: the run's frames {}; by its end {} "
                    "lost, {} not collected, {} not written",
                    fields.file, frames, fields.lost, fields.dropped, fields.unwritten);
    status.notes += (status.notes.empty() ? "" : "; ") + note;
    return trace::recorded_status_payload(std::move(status), fields);
}

std::vector<std::string> TraceRecorder::files() const {
    std::vector<std::string> names;
    names.reserve(files_.size());
    for (const std::uint64_t number : files_)
        names.push_back(sink_->name(number));
    return names;
}

Status TraceRecorder::begin_file(TraceExperiment& experiment) {
    ++sequence_;
    file_written_ = 0;
    frames_in_file_ = 0;
    first_in_file_ = next_;
    // The text section is made before the file, and written the moment it exists: a kill -9
    // that slow work would have let in leaves an empty file, which nothing can seal.
    const std::string text =
        trace_file_text_section(experiment, tdesc_, status_payload(experiment));
    status_at_ = text.find("\nstatus ") + 8;
    if (auto s = sink_->create(sequence_); !s) return s;
    file_began_ = std::chrono::steady_clock::now();
    files_.push_back(sequence_);
    ++totals_.files;
    if (auto s = write(reinterpret_cast<const std::uint8_t*>(text.data()), text.size()); !s) {
        sink_->abandon(); // holds no frame
        files_.pop_back();
        return s;
    }
    while (options_.keep_files != 0 && files_.size() > options_.keep_files) {
        if (auto s = sink_->remove(files_.front()); !s) return s;
        files_.pop_front();
        ++totals_.files_removed;
    }
    return ok_status();
}

Status TraceRecorder::flush() {
    if (batch_.empty()) return ok_status();
    Status s = write(batch_.data(), batch_.size()); // cut back to whole frames if it fails
    (s ? totals_.frames : totals_.unwritten) += batch_frames_;
    if (s) frames_in_file_ += batch_frames_;
    batch_.clear();
    batch_frames_ = 0;
    return s;
}

Status TraceRecorder::end_file(TraceExperiment& experiment) {
    if (!sink_->has_current()) return ok_status();
    const Status flushed = flush();
    Status s = write(trace::kEndOfFrames, sizeof trace::kEndOfFrames);
    const std::string status = status_payload(experiment);
    if (s)
        s = sink_->rewrite(
            status_at_,
            std::span(reinterpret_cast<const std::uint8_t*>(status.data()), status.size()));
    const Status ended = sink_->end();
    if (s) s = ended;
    return flushed ? s : flushed;
}

Status TraceRecorder::write(const std::uint8_t* bytes, std::size_t size) {
    if (auto s = sink_->append(std::span(bytes, size)); !s) return s; // cut back to whole
    file_written_ += size;
    return ok_status();
}

Result<std::optional<SealedRecording>> seal_newest_recording(const std::string& dir) {
    const std::uint64_t newest = last_file_number(dir, kRecordingPrefix);
    if (newest == 0) return std::optional<SealedRecording>();
    SealedRecording sealed{numbered_file_path(dir, kRecordingPrefix, newest)};
    auto report = trace::seal_trace_file(sealed.path);
    if (!report) return report.error();
    sealed.was_sealed = report->was_sealed;
    sealed.frames = report->frames;
    sealed.cut_bytes = report->cut_bytes;
    if (!sealed.was_sealed) sync_dir(dir);
    return std::optional<SealedRecording>(std::move(sealed));
}

} // namespace tpagent::experiment
