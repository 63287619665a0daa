// Non-stop mode: an event stops its own thread only; pauses stop them all for a while.
#include "process/linux/linux_process.hpp"
#include <csignal>
#include <spdlog/spdlog.h>
#include <unistd.h>

namespace tpagent::process {

Status LinuxProcess::set_non_stop(bool on) {
    if (on == non_stop_) return ok_status();
    if (on) {
        // From all-stop, stopped: every thread stays so until gdb resumes it; events held back
        // are handed out when it does.
        non_stop_ = true;
        running_ = any_wants_run(threads_);
        return ok_status();
    }
    // Back to all-stop: everything stops; events not handed out wait for the next resume.
    while (pause_depth_ > 0)
        unpause_all();
    non_stop_ = false;
    for (auto& [tid, t] : threads_)
        t.forget_stop_request(); // its SIGSTOP, still on the way, is a quiet one now
    running_ = any_wants_run(threads_);
    std::optional<StopEvent> end;
    if (running_) end = stop_all_now(); // a quiet stop (gdb asks `?` next), or the process's end
    std::deque<StopEvent> ends;
    for (StopEvent& ev : reported_) {
        auto it = threads_.find(ev.tid);
        if (ev.kind != StopEvent::Kind::Signal)
            ends.push_back(ev);
        else if (it != threads_.end() && !it->second.pending && !ev.thread_created)
            it->second.pending = ev;
    }
    if (end && end->kind != StopEvent::Kind::Signal) ends.push_back(*end);
    reported_ = std::move(ends); // poll() hands out an end in all-stop too
    return ok_status();
}

void LinuxProcess::report_alone(pid_t tid, LinuxThread& t, StopEvent ev) {
    t.gdb = GdbRequest::Stopped; // (this answers a vCont;t too; its SIGSTOP is taken later)
    // Out of pads and the collector before gdb sees it; a thread with an event of its own
    // only where it stands on an instruction boundary.
    const bool own_event = ev.signal != 0;
    if (own_event) t.pending = ev;
    fast_sites_.leave_pads(tid, t, t.pending || (chosen_ && chosen_->tid == tid));
    BranchTraces::clear_block_end(t, memory_->breakpoints());
    if (own_event) t.pending.reset();
    running_ = any_wants_run(threads_);
    reported_.push_back(std::move(ev));
}

std::optional<StopEvent> LinuxProcess::take_reported() {
    if (pausing_ || pause_depth_ > 0 || reported_.empty()) return std::nullopt;
    if (!non_stop_ && reported_.front().kind == StopEvent::Kind::Signal) return std::nullopt;
    StopEvent ev = std::move(reported_.front());
    reported_.pop_front();
    return ev;
}

void LinuxProcess::stop_threads(const std::vector<pid_t>& tids) {
    if (!non_stop_ || !alive_) return;
    for (pid_t tid : tids) {
        auto it = threads_.find(tid);
        if (it == threads_.end() || !it->second.wants_run()) continue; // stopped for gdb already
        LinuxThread& t = it->second;
        if (t.kernel.stopped()) { // between tpagent's own stops: it stops here
            report_alone(tid, t, StopEvent::signal_stop(pid_, tid, 0));
            continue;
        }
        t.gdb = GdbRequest::StopAsked;
        if (t.sigstop_on_way()) continue;
        t.owed_sigstop = OwedSigstop::Ours;
        tgkill(pid_, tid, SIGSTOP);
    }
}

Status LinuxProcess::pause_all() {
    if (!non_stop_ || !alive_ || pause_depth_++ > 0) return ok_status();
    pausing_ = true;
    stopping_all_ = true; // events that come meanwhile are held back (LinuxThread::pending)
    stop_running_threads();
    pid_t tid = 0;
    WaitStatus status;
    while (alive_ && !all_stopped(threads_) && wait_next(tid, status))
        // The process's end (or an event with nowhere else to go) is handed out later.
        if (auto ev = handle_status(tid, status)) reported_.push_back(*ev);
    stopping_all_ = false;
    running_ = false; // as in all-stop with the program stopped: nothing resumes by itself
    if (alive_) fast_sites_.leave_pads(chosen_ ? chosen_->tid : 0);
    for (auto& [tid, t] : threads_)
        BranchTraces::clear_block_end(t, memory_->breakpoints());
    if (!alive_) return make_error(ErrorCode::NoProcess, "the program ended");
    return ok_status();
}

void LinuxProcess::unpause_all() {
    if (!non_stop_ || pause_depth_ == 0 || --pause_depth_ > 0) return;
    pausing_ = false;
    if (!alive_) return;
    for (auto& [tid, t] : threads_) {
        if (!t.wants_run()) continue; // stopped for gdb: stays so
        if (t.pending || t.stop_requested()) {
            // Its event came during the pause (or its vCont;t SIGSTOP was taken by one). A
            // dropped event (its breakpoint removed meanwhile) still answers a vCont;t: gdb
            // waits for that stop and would not ask again.
            std::optional<StopEvent> ev;
            if (t.pending && pending_still_valid(tid, t))
                ev = *t.pending;
            else if (t.stop_requested())
                ev = StopEvent::signal_stop(pid_, tid, 0);
            t.pending.reset();
            if (ev) {
                t.gdb = GdbRequest::Stopped;
                reported_.push_back(std::move(*ev));
                continue;
            }
        }
        if (!t.kernel.stopped()) continue; // a new thread on its way to its first stop
        if (auto r = resume_thread(tid, t, t.last_resume.step, 0); !r) {
            spdlog::warn("thread {}: cannot resume after a pause: {}", tid, r.error().text);
            t.gdb = GdbRequest::Stopped;
            reported_.push_back(StopEvent::signal_stop(pid_, tid, SIGTRAP));
        }
    }
    running_ = any_wants_run(threads_);
}

} // namespace tpagent::process
