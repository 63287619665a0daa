// --record: each trace run recorded into rotating files (experiment/trace_recorder.hpp), the
// frames moved there by a timer while the run goes on, whether gdb is connected or not.
#include "server/server.hpp"
#include "arch/arch.hpp"
#include <chrono>
#include <spdlog/spdlog.h>

namespace tpagent::server {

namespace {
// How often the frames are moved: often enough that a buffer of a few MiB does not fill
// between two moves at tens of thousands of frames a second.
constexpr std::chrono::milliseconds kRecordInterval{50};
} // namespace

// tstatus's note: what is in the files, and every frame not there, by reason.
void Server::note_recording() {
    const auto& t = recorder_->totals();
    std::string note = fmt::format("recorded {} frame(s) into {} file(s) in {}", t.frames, t.files,
                                   *options_.record_dir);
    if (t.files_removed) note += fmt::format(" ({} oldest removed)", t.files_removed);
    if (t.lost) note += fmt::format(", {} lost: overwritten before recorded", t.lost);
    if (const auto dropped = experiment_.dropped_fast_frames() + experiment_.dropped_trap_frames())
        note += fmt::format(", {} not collected: no room left in the buffer", dropped);
    experiment_.set_recording_note(std::move(note));
}

void Server::end_recording() {
    if (!recorder_) return;
    if (auto s = recorder_->finish(experiment_); !s) spdlog::warn("recording: {}", s.error().text);
    note_recording();
    recorder_.reset();
}

void Server::watch_recording() {
    if (!options_.record_dir) return;
    if (recorder_ && (!experiment_.running() || experiment_.runs() != recorded_run_))
        end_recording();
    if (!recorder_ && experiment_.running() && experiment_.runs() != recorded_run_) {
        recorded_run_ = experiment_.runs();
        recorder_.emplace(experiment::RecordOptions{
            *options_.record_dir, options_.record_file_bytes, options_.record_files});
        const auto xml = arch::host_architecture().feature_xml("target.xml");
        if (auto s = recorder_->start(experiment_, xml ? *xml : std::string()); !s) {
            spdlog::warn("recording: {}", s.error().text);
            experiment_.set_recording_note("not recorded: " + s.error().text);
            recorder_.reset();
        } else {
            note_recording();
        }
    }
    if (!recorder_ || record_poll_armed_) return;
    record_poll_armed_ = true;
    record_timer_.expires_after(kRecordInterval);
    record_timer_.async_wait([this](const boost::system::error_code& ec) {
        record_poll_armed_ = false;
        if (ec || !recorder_) return;
        experiment_.poll(inferior_.get()); // fast frames' counts and stop reasons first
        if (experiment_.running()) {
            if (auto s = recorder_->poll(experiment_); !s) {
                spdlog::warn("recording: {}", s.error().text);
                end_recording();
                return;
            }
            note_recording();
        }
        watch_recording();
    });
}

} // namespace tpagent::server
