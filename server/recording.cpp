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

void Server::end_recording() {
    if (!recorder_) return;
    if (auto s = recorder_->finish(experiment_); !s) spdlog::warn("recording: {}", s.error().text);
    const auto& t = recorder_->totals();
    spdlog::info("recorded {} frame(s) in {} file(s) in {}{}", t.frames, t.files,
                 *options_.record_dir,
                 t.lost ? fmt::format(", {} lost before they were recorded", t.lost) : "");
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
            recorder_.reset();
        }
    }
    if (!recorder_ || record_poll_armed_) return;
    record_poll_armed_ = true;
    record_timer_.expires_after(kRecordInterval);
    record_timer_.async_wait([this](const boost::system::error_code& ec) {
        record_poll_armed_ = false;
        if (ec || !recorder_) return;
        experiment_.poll(inferior_.get()); // fast frames' counts and stop reasons first
        if (experiment_.running())
            if (auto s = recorder_->poll(experiment_); !s) {
                spdlog::warn("recording: {}", s.error().text);
                end_recording();
                return;
            }
        watch_recording();
    });
}

} // namespace tpagent::server
