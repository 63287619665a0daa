// Run control: resuming threads and turning wait statuses into all-stop events.
#include "process/linux/linux_process.hpp"
#include "process/linux/terminal.hpp"
#include "base/proc_files.hpp"
#include <algorithm>
#include <cerrno>
#include <csignal>
#include <utility>
#include <spdlog/spdlog.h>
#include <sys/ptrace.h>
#include <sys/wait.h>
#include <unistd.h>

namespace tpagent::process {

using thread_activity::PassingBreakpoint;
using thread_activity::Plain;
using thread_activity::RecordStepping;
using thread_activity::RunningToBlockEnd;
using thread_activity::SteppingFastJump;
using thread_activity::SteppingOverSite;
using thread_activity::SteppingThroughPad;

namespace {
// The software branch recorder's step to the next taken branch (x86: the CPU's BTF).
#if defined(__x86_64__)
constexpr long kBlockStep = PTRACE_SINGLEBLOCK;
constexpr bool kSyscallStepIsBreakpoint = true;
#else
constexpr long kBlockStep = PTRACE_SINGLESTEP;
constexpr bool kSyscallStepIsBreakpoint = false;
#endif
} // namespace

Status LinuxProcess::resume_thread(pid_t tid, LinuxThread& t, bool step, int signal) {
    fast_sites_.program_resumed();
    if (debug_points_.hw().any())
        if (auto h = debug_points_.hw().apply(tid); !h) return h;
    step = step || t.while_stepping; // while-stepping goes on whatever gdb asked
    BranchTraces::Recording* recorder = branch_traces_.software_recording(tid);
    // (A block end's breakpoint is placed again below, from where the thread is now.)
    BranchTraces::clear_block_end(t, memory_->breakpoints());
    if (recorder) branch_traces_.observe(tid, *recorder); // before a site's pad takes the pc
    if (!step) t.end<SteppingThroughPad>(); // a thread inside a pad just runs out of it
    if (t.is_doing<PassingBreakpoint>())
        if (auto p = pass_gdb_breakpoint(tid, t, step); !p) return p;
    // Leaving a site: run its displaced instruction from the pad instead of the breakpoint
    // (unless gdb has its own breakpoint there, which gdb steps over itself).
    // (At a system call's entry the breakpoint at the pc has not run yet: it runs after the
    // call, a hit as any other.)
    if (!trap_sites_.empty() && !t.is_doing<SteppingThroughPad>() && !t.at_syscall_entry)
        if (auto p = trap_sites_.pass(tid, t, step); !p) return p;
    t.collected_at.reset();
    if (!step) t.end<SteppingFastJump>();
    if ((t.is_doing<Plain>() || t.is_doing<RecordStepping>()) && !fast_sites_.empty())
        if (auto r = fast_sites_.resume_inside_jump(tid, t, step); !r) return r;
    if (step && (t.is_doing<Plain>() || t.is_doing<RecordStepping>()) && !fast_sites_.empty()) {
        auto s = registers_.snapshot(tid, false);
        if (!s) return s.error();
        const std::uint64_t pc = arch_.pc(**s);
        if (fast_sites_.has(pc) && !memory_->breakpoints().inserted_at(pc)) {
            t.activity = SteppingFastJump{pc};
        }
    }
    // A recorded thread that is to run steps instead: one branch (or instruction) at a time.
    if (recorder && !step)
        t.activity = RecordStepping{};
    else
        t.end<RecordStepping>();
    long req = step ? PTRACE_SINGLESTEP : catch_syscalls_ ? PTRACE_SYSCALL : PTRACE_CONT;
    if (t.is_doing<RecordStepping>()) {
        req = recorder->method == BranchStepMethod::SingleSteps ? long{PTRACE_SINGLESTEP}
                                                                : kBlockStep;
        // Faster: run to a breakpoint at the next branch (a signal's handler is stepped into).
        // (place_block_end sets the thread RunningToBlockEnd.) Only with no other thread that
        // could meet the breakpoint: another would have to step over it, lifting it for a
        // moment in which this one could pass it unseen; nor with the memory shared with
        // another process. Not into a fast tracepoint's jump.
        const auto in_jump = [this](std::uint64_t at) { return fast_sites_.in_jump(at); };
        if (recorder->method == BranchStepMethod::BlockEnds && signal == 0 &&
            threads_.size() == 1 && !vfork_running_ && !fork_children_.in_parent_memory() &&
            branch_traces_.place_block_end(tid, t, *recorder, memory_->breakpoints(), in_jump)) {
            req = catch_syscalls_ ? PTRACE_SYSCALL : PTRACE_CONT;
        }
    }
    // Only a PTRACE_SYSCALL resume stops at the return of the call entered last.
    if (req != PTRACE_SYSCALL) t.in_syscall.reset();
    t.at_syscall_entry = false;
    if (ptrace(static_cast<__ptrace_request>(req), tid, nullptr,
               reinterpret_cast<void*>(static_cast<long>(signal))) != 0) {
        if (errno == ESRCH) return ok_status(); // died meanwhile: its exit status will come
        return make_error(ErrorCode::SystemError, "ptrace resume failed");
    }
    t.kernel.resumed(step);
    t.regs.reset();
    return ok_status();
}

void LinuxProcess::continue_after_event(pid_t tid, LinuxThread& t, bool keep_running) {
    if (keep_running) {
        continue_after_stop(tid, t, t.kernel.stepping());
    } else if (stopping_all_) {
        // An event stop is no place to stay: on to a SIGSTOP, with everyone else.
        if (auto r = resume_thread(tid, t, t.kernel.stepping(), 0); !r)
            spdlog::warn("thread {}: cannot resume after a ptrace event: {}", tid, r.error().text);
        // One SIGSTOP at a time: a second, sent after the first was taken, would stop the
        // thread again after the stop-all, in front of gdb (a system call's stops come
        // before the signal that ends the call is taken).
        if (t.owed_sigstop != OwedSigstop::Ours) {
            t.owed_sigstop = OwedSigstop::Ours;
            tgkill(pid_, tid, SIGSTOP);
        }
    }
}

void LinuxProcess::continue_after_stop(pid_t tid, LinuxThread& t, bool step) {
    if (!running_ || stopping_all_ || !t.wants_run()) return;
    if (auto r = resume_thread(tid, t, step, 0); !r) {
        // It stays stopped: report that rather than leave gdb waiting for a thread that
        // will never run.
        spdlog::warn("thread {}: cannot resume: {}", tid, r.error().text);
        // (The caller's finish_stop_all() reports it.)
        choose(tid, t, StopEvent::signal_stop(pid_, tid, SIGTRAP));
    }
}

bool LinuxProcess::pending_still_valid(pid_t tid, LinuxThread& t) {
    // A step's end held back answers gdb's last request, not this one: the thread has run
    // the instruction, and goes on as now asked (as if the stop-all had come first).
    if (t.pending->step_done && !non_stop_) return false;
    // A breakpoint hit whose breakpoint gdb has since removed is dropped: the thread, whose pc
    // was already moved back, simply runs the original instruction.
    if (!t.pending->swbreak) return true;
    auto pc = registers_.read_pc(tid);
    return pc && (memory_->breakpoints().inserted_at(*pc) || memory_->carried(*pc));
}

Result<std::optional<StopEvent>> LinuxProcess::resume(const std::vector<ThreadResume>& actions) {
    if (!alive_) return make_error(ErrorCode::NoProcess, "the program is not being run");
    branch_traces_.forget_decoded(); // gdb may have changed the code since
    for (const auto& a : actions) {
        if (!non_stop_) break;
        // Non-stop: a held-back event is handed out by the next poll(), its thread staying.
        auto it = threads_.find(a.tid);
        if (it == threads_.end() || !it->second.pending) continue;
        if (pending_still_valid(a.tid, it->second)) reported_.push_back(*it->second.pending);
        it->second.pending.reset();
    }
    for (const auto& a : actions) {
        auto it = threads_.find(a.tid);
        if (it == threads_.end() || !it->second.pending) continue;
        if (pending_still_valid(a.tid, it->second)) {
            StopEvent ev = *it->second.pending;
            it->second.pending.reset();
            spdlog::debug("reporting held-back event of thread {}", a.tid);
            return std::optional<StopEvent>(ev);
        }
        it->second.pending.reset();
    }
    for (const auto& a : actions) {
        auto it = threads_.find(a.tid);
        if (it == threads_.end()) continue;
        LinuxThread& t = it->second;
        if (non_stop_ &&
            (t.wants_run() || std::any_of(reported_.begin(), reported_.end(),
                                          [&](const auto& e) { return e.tid == a.tid; })))
            continue; // running already, or its event is still to be handed out
        t.gdb_resumed();
        t.last_resume.step = a.step;
        t.last_resume.range_start = a.range_start;
        t.last_resume.range_end = a.range_end;
        if (!t.kernel.stopped()) continue;
        if (auto s = resume_thread(a.tid, t, a.step, a.signal); !s) {
            t.gdb = GdbRequest::Stopped;
            running_ = non_stop_ ? any_wants_run(threads_) : running_ || any_wants_run(threads_);
            return s.error();
        }
    }
    running_ = non_stop_ ? any_wants_run(threads_) : true;
    return std::optional<StopEvent>();
}

Status LinuxProcess::resume_all() {
    std::vector<ThreadResume> plan;
    for (const auto& [tid, t] : threads_)
        if (!t.awaiting_first_stop()) plan.push_back({tid, false, 0});
    // All-stop's resume() hands back one held-back event instead of resuming: with nobody
    // to report them to, they are dropped until the threads run.
    for (std::size_t held = 0; held <= plan.size(); ++held) {
        auto r = resume(plan);
        if (!r) return r.error();
        if (!*r) return ok_status();
    }
    return ok_status();
}

std::optional<StopEvent> LinuxProcess::stop_all_now() {
    if (!alive_ || !running_) return std::nullopt;
    StopEvent quiet;
    quiet.pid = pid_;
    quiet.tid = lead_thread(threads_, pid_);
    quiet.signal = 0;
    chosen_ = quiet;
    stopping_all_ = true;
    stop_running_threads();
    if (auto ev = finish_stop_all()) return ev;
    pid_t tid = 0;
    WaitStatus status;
    while (alive_ && wait_next(tid, status))
        if (auto ev = handle_status(tid, status)) return ev;
    return std::nullopt;
}

void LinuxProcess::stop_running_threads() {
    for (auto& [tid, t] : threads_) {
        if (t.kernel.stopped() || t.sigstop_on_way()) continue; // (a new thread's first is, say)
        t.owed_sigstop = OwedSigstop::Ours;
        tgkill(pid_, tid, SIGSTOP);
    }
}

bool LinuxProcess::wait_next(pid_t& tid, WaitStatus& status) {
    for (;;) {
        tid = WaitRouter::instance().wait(*this, status, __WALL);
        if (tid >= 0) return true;
        if (errno != EINTR) return false;
    }
}

void LinuxProcess::interrupt() {
    // Also when the program has just stopped: gdb's Ctrl-C crossed the stop reply on the
    // wire, and is for the next resume to report (as gdbserver's SIGINT is), not lost.
    if (!alive_) return;
    // As a terminal would: the whole process group when we started it.
    if (!attached_)
        ::kill(-pid_, SIGINT);
    else
        ::kill(pid_, SIGINT);
}

std::optional<StopEvent> LinuxProcess::poll() {
    if (auto ev = take_reported()) return ev;
    while (alive_) {
        WaitStatus status;
        pid_t tid = WaitRouter::instance().wait(*this, status, WNOHANG | __WALL);
        if (tid <= 0) break;
        if (auto ev = handle_status(tid, status)) return ev;
    }
    return take_reported();
}

std::optional<StopEvent> LinuxProcess::handle_status(pid_t tid, WaitStatus status) {
    // A thread of a child the trace follows: handled apart, never reported to gdb.
    if (!threads_.count(tid) && tid != pid_ && fork_children_.followed_event(tid, status))
        return std::nullopt;
    if (status.ended()) {
        if (fork_children_.ended(tid)) return std::nullopt; // a held child, killed meanwhile
        if (tid == pid_) {
            StopEvent ev;
            ev.pid = ev.tid = pid_;
            if (status.exited()) {
                ev.kind = StopEvent::Kind::Exited;
                ev.exit_code = status.exit_code();
            } else {
                ev.kind = StopEvent::Kind::Killed;
                ev.signal = status.fatal_signal();
            }
            if (!attached_) terminal::take_back(); // the group it was given is gone
            mark_dead();
            return ev;
        }
        auto it = threads_.find(tid);
        // It died mid-step: the breakpoint goes back.
        if (it != threads_.end() && it->second.is_doing<SteppingOverSite>())
            trap_sites_.end_step_over(tid, it->second);
        if (it != threads_.end() && non_stop_ && reports_.threads) {
            // (gdb may be waiting for its stop: a vCont;t it will never answer.)
            StopEvent ev;
            ev.pid = pid_;
            ev.tid = tid;
            ev.thread_exited = true;
            ev.exit_code = status.exited() ? status.exit_code() : 0;
            reported_.push_back(ev);
        }
        if (it != threads_.end()) BranchTraces::clear_block_end(it->second, memory_->breakpoints());
        threads_.erase(tid);
        branch_traces_.erase(tid);
        if (non_stop_ && !stopping_all_) running_ = any_wants_run(threads_);
        if (auto ev = finish_stop_all()) return ev;
        return no_resumed_event();
    }
    if (!status.stopped()) return std::nullopt;
    auto it = threads_.find(tid);
    // A forked child's first stop, ahead of its parent's fork event: kept for that.
    if (it == threads_.end() && fork_children_.first_stop_early(tid)) return std::nullopt;
    if (it == threads_.end()) {
        // A new thread's first stop can arrive before its parent's clone event (the kernel
        // hands out the newest tracee's events first), and it may run and exit before that.
        add_thread(tid, false);
        seen_before_clone_.insert(tid);
        LinuxThread& t = threads_[tid];
        if (non_stop_ && reports_.threads) {
            t.gdb_resumed(); // (a pause hands out its event when it ends)
            return report_created(tid, t);
        }
        if (running_ && !stopping_all_) {
            t.gdb_resumed();
            continue_after_stop(tid, t, false);
        } else if (non_stop_) {
            t.gdb_resumed(); // its parent runs: so does it, once the pause is over
        }
        return finish_stop_all();
    }
    LinuxThread& t = it->second;
    t.kernel.took_stop();
    t.regs.reset();
    return handle_stop(tid, t, status);
}

std::optional<StopEvent> LinuxProcess::handle_stop(pid_t tid, LinuxThread& t, WaitStatus status) {
    const int sig = status.stop_signal();
    const int event = status.ptrace_event();
    spdlog::debug("thread {} stopped: signal {} event {}", tid, sig, event);
    bool keep_running = running_ && !stopping_all_ && t.wants_run();

    if (event == PTRACE_EVENT_EXEC) { // that image is gone
        t.end<SteppingOverSite>();
        t.end<PassingBreakpoint>();
    }
    if (const auto* over = t.doing<SteppingOverSite>()) {
        // Whatever stopped the step (its trap, a signal, an event), the breakpoint goes back.
        const bool resumes = over->resumes;
        trap_sites_.end_step_over(tid, t);
        siginfo_t info{};
        if (sig == SIGTRAP && event == 0 && resumes &&
            ptrace(PTRACE_GETSIGINFO, tid, nullptr, &info) == 0 && info.si_code == TRAP_TRACE &&
            !debug_points_.hw().any()) {
            continue_after_stop(tid, t, false); // the step was tpagent's: run on as asked
            return finish_stop_all();
        }
    }

    // A clone, fork, vfork or vfork-done event stops the thread inside its call: the return,
    // if caught, is that call's, whatever resume came between (gdb turns catching off at each
    // stop and on again to resume, and the resume with it off forgot the call).
    // (Only while catching, or at a vfork-done: gdb resumes a vfork event with catching off.)
    if (event == PTRACE_EVENT_VFORK_DONE ||
        (catch_syscalls_ && (event == PTRACE_EVENT_CLONE || event == PTRACE_EVENT_FORK ||
                             event == PTRACE_EVENT_VFORK)))
        if (auto s = registers_.snapshot(tid, false))
            if (const long number = arch_.syscall_number(**s); number >= 0) t.in_syscall = number;
    if (event == PTRACE_EVENT_CLONE) {
        unsigned long new_tid = 0;
        // Failing, the new thread is still found: its first stop comes as an unknown tid.
        if (ptrace(PTRACE_GETEVENTMSG, tid, nullptr, &new_tid) != 0) new_tid = 0;
        auto nt = static_cast<pid_t>(new_tid);
        if (nt > 0 && !seen_before_clone_.erase(nt) && !threads_.count(nt)) {
            add_thread(nt, true);
            threads_[nt].kernel.resumed(false); // it is running towards its first SIGSTOP
            threads_[nt].gdb_resumed();
        }
        // While stopping all, the new thread is on its way to a stop already.
        continue_after_event(tid, t, keep_running);
        return finish_stop_all();
    }
    if (event == PTRACE_EVENT_FORK || event == PTRACE_EVENT_VFORK) {
        unsigned long child = 0;
        const bool known = ptrace(PTRACE_GETEVENTMSG, tid, nullptr, &child) == 0 && child > 0;
        const bool vfork = event == PTRACE_EVENT_VFORK;
        if (vfork) vfork_running_ = true;
        if (known && (vfork ? reports_.vfork : reports_.fork)) {
            fork_children_.hold_child(static_cast<pid_t>(child), vfork);
            StopEvent ev = StopEvent::signal_stop(pid_, tid, SIGTRAP);
            ev.fork_child = static_cast<pid_t>(child);
            ev.vfork = vfork;
            return report(tid, t, std::move(ev));
        }
        if (known) fork_children_.release_child(static_cast<pid_t>(child), vfork);
        continue_after_event(tid, t, keep_running);
        return finish_stop_all();
    }
    if (event == PTRACE_EVENT_VFORK_DONE) {
        vfork_running_ = false;
        // The vfork child has exec'd or exited: the parent's breakpoints go back.
        memory_->lower_after_vfork();
        if (reports_.vfork) {
            StopEvent ev = StopEvent::signal_stop(pid_, tid, SIGTRAP);
            ev.vfork_done = true;
            return report(tid, t, std::move(ev));
        }
        continue_after_event(tid, t, keep_running);
        return finish_stop_all();
    }
    if (event == PTRACE_EVENT_EXEC) {
        // The old image (and its other threads, breakpoints, jumps, pads) is gone: nothing
        // of it may be written into the new one. (A vfork child's old image is its parent's.)
        // Children the trace followed get the old image's code back first.
        fork_children_.stop_following();
        fork_children_.unshare_memory();
        memory_->open(pid_);
        forget_image();
        debug_points_.forget_hw(); // the kernel cleared the debug registers; gdb sets them again
        // Another thread ran execve and took the process id: its own state (a SIGSTOP sent
        // to it, say) comes along, the old leader's goes.
        unsigned long former = 0;
        const bool other_thread = ptrace(PTRACE_GETEVENTMSG, tid, nullptr, &former) == 0 &&
                                  former > 0 && static_cast<pid_t>(former) != tid;
        // The other threads' recordings end with them; the survivor's goes on in the new image.
        branch_traces_.keep_only(tid, other_thread ? std::optional(static_cast<pid_t>(former))
                                                   : std::nullopt);
        if (auto f = threads_.find(static_cast<pid_t>(former));
            other_thread && f != threads_.end()) {
            LinuxThread moved = std::move(f->second);
            moved.kernel.took_stop();
            moved.regs.reset();
            t = std::move(moved);
        }
        for (auto i = threads_.begin(); i != threads_.end();)
            i = i->first == tid ? std::next(i) : threads_.erase(i);
        // Their clone events came before the exec's, or never will (PTRACE_GETEVENTMSG failed).
        seen_before_clone_.clear();
        branch_traces_.forget_decoded();
        if (auto* r = branch_traces_.find(tid))
            if (auto pc = registers_.read_pc(tid)) r->software.moved_to(*pc);
        // A stop-all for a thread the exec ended: the exec's event takes its place, or, not
        // reported, a quiet stop of the thread left (a stop_all_now waits for one).
        if (chosen_ && (!threads_.count(chosen_->tid) || (other_thread && chosen_->tid == tid))) {
            if (reports_.exec) {
                chosen_.reset();
                stopping_all_ = false;
            } else {
                chosen_ = StopEvent::signal_stop(pid_, tid, 0);
            }
        }
        t.end<SteppingThroughPad>();
        t.end<SteppingFastJump>();
        t.collected_at.reset();
        t.while_stepping.reset();
        executable_ = read_link(fmt::format("/proc/{}/exe", pid_));
        if (on_exec_) on_exec_();
        if (reports_.exec) {
            StopEvent ev = StopEvent::signal_stop(pid_, tid, SIGTRAP);
            ev.exec_path = executable_;
            return report(tid, t, std::move(ev));
        }
        if (keep_running) continue_after_stop(tid, t, t.kernel.stepping());
        return finish_stop_all();
    }
    if (sig == SIGSTOP && t.sigstop_on_way()) {
        const bool first = t.awaiting_first_stop();
        t.owed_sigstop = OwedSigstop::None;
        if (first && non_stop_ && reports_.threads && !t.stop_requested())
            return report_created(tid, t);
        // Non-stop: gdb's vCont;t, answered with signal 0.
        if (t.take_stop_request() && non_stop_)
            return report(tid, t, StopEvent::signal_stop(pid_, tid, 0));
        if (keep_running) continue_after_stop(tid, t, !first && t.kernel.stepping());
        return finish_stop_all();
    }
    if (status.kind() == WaitStatus::Kind::SyscallStop) return handle_syscall_stop(tid, t);
    if (sig == SIGTRAP) return handle_trap(tid, t);
    if ((sig == SIGSEGV || sig == SIGBUS) && fast_sites_.recover_collector_fault(tid)) {
        if (keep_running) continue_after_stop(tid, t, t.kernel.stepping());
        return finish_stop_all();
    }
    if (pass_signals_.count(sig) && (!t.kernel.stepping() || t.is_doing<SteppingFastJump>()) &&
        !stopping_all_ && running_ && !fault_at_breakpoint(tid, sig)) {
        if (auto r = resume_thread(tid, t, t.kernel.stepping(), sig); r) return std::nullopt;
    }
    return report(tid, t, StopEvent::signal_stop(pid_, tid, sig));
}

std::optional<StopEvent> LinuxProcess::handle_syscall_stop(pid_t tid, LinuxThread& t) {
    // Entry or return: the kernel says which (5.3 and later); else they alternate.
    __ptrace_syscall_info info{};
    bool entry = !t.in_syscall;
    long number = t.in_syscall.value_or(-1);
    if (ptrace(PTRACE_GET_SYSCALL_INFO, tid, sizeof info, &info) > 0) {
        entry = info.op == PTRACE_SYSCALL_INFO_ENTRY;
        if (entry)
            number = static_cast<long>(info.entry.nr);
        else if (info.op != PTRACE_SYSCALL_INFO_EXIT)
            number = -1; // a seccomp stop
    }
    t.in_syscall = entry ? std::optional<long>(number) : std::nullopt;
    t.at_syscall_entry = entry;
    // The in-process agent's own calls (fast tracepoints' collector) are not the program's.
    std::uint64_t pc = 0;
    if (auto s = registers_.snapshot(tid, false)) pc = arch_.pc(**s);
    const bool agent = fast_sites_.in_agent_code(pc);
    // A return whose entry was not seen (the thread was in the call when catching began) has
    // no number to report, as has a call gdb did not ask for.
    const bool caught =
        catch_syscalls_ && number >= 0 && !agent &&
        (catch_syscalls_->empty() || catch_syscalls_->count(static_cast<int>(number)));
    if (!caught) {
        continue_after_event(tid, t, running_ && !stopping_all_ && t.wants_run());
        return finish_stop_all();
    }
    StopEvent ev = StopEvent::signal_stop(pid_, tid, SIGTRAP);
    ev.syscall = StopEvent::Syscall{entry, number};
    return report(tid, t, ev);
}

std::optional<StopEvent> LinuxProcess::handle_trap(pid_t tid, LinuxThread& t) {
    if (fast_sites_.has_breakpoint_trap())
        if (auto s = registers_.snapshot(tid, false);
            s && fast_sites_.at_breakpoint_trap(arch_.pc(**s))) {
            if (arch_.first_argument(**s) != 0) return breakpoint_condition_held(tid, t);
            // (No record: a dprintf found the agent's ring of lines full. Emptied, the thread
            // goes on and writes its line.)
            debug_points_.read_ring();
            fast_sites_.skip_breakpoint_trap(tid);
            continue_after_stop(tid, t, t.kernel.stepping());
            return finish_stop_all();
        }
    siginfo_t info{};
    // A thread that is not being stepped and stopped just past a site executed its breakpoint:
    // the common tracepoint hit needs no PTRACE_GETSIGINFO.
    // (The x86 system-call quirk below applies to the recorder's steps too; on arm64 a TRAP_BRKPT
    // during them is the program's own brk.)
    const bool stepped =
        t.kernel.stepping() || (kSyscallStepIsBreakpoint && t.is_doing<RecordStepping>());
    bool plain_run = !stepped && !t.is_doing<SteppingThroughPad>() &&
                     !t.is_doing<SteppingFastJump>() && !t.while_stepping &&
                     !debug_points_.hw().any();
    bool at_site = false;
    if (plain_run && !trap_sites_.empty()) {
        if (auto s = registers_.snapshot(tid, false))
            at_site = trap_sites_.has(arch_.pc(**s) - arch_.pc_after_breakpoint(0));
    }
    if (at_site)
        info.si_code = SI_KERNEL;
    else
        ptrace(PTRACE_GETSIGINFO, tid, nullptr, &info);
    // A single step over a system call instruction is reported by the kernel's system-call
    // exit as TRAP_BRKPT (x86): a step of ours that stopped where no breakpoint of ours is,
    // is that step. The collector makes system calls (mapping its buffer, reading memory).
    if (info.si_code == TRAP_BRKPT && stepped) {
        if (auto s = registers_.snapshot(tid, false)) {
            const std::uint64_t at = arch_.pc(**s) - arch_.pc_after_breakpoint(0);
            if (!trap_sites_.has(at) && !memory_->breakpoints().inserted_at(at) &&
                !trap_sites_.recently_removed(at))
                info.si_code = TRAP_TRACE;
        }
    }
    bool single_step = info.si_code == TRAP_TRACE;
    if (t.is_doing<SteppingThroughPad>() && single_step && !trap_sites_.finish_pad_step(tid, t)) {
        continue_after_stop(tid, t, true); // still inside the displaced code: step on
        return finish_stop_all();
    }
    if (t.is_doing<SteppingFastJump>() && single_step && !fast_sites_.finish_step(tid, t)) {
        continue_after_stop(tid, t, true); // still in the pad or the collector: step on
        return finish_stop_all();
    }
    if (t.while_stepping && single_step) {
        trap_sites_.stepped(tid, t.while_stepping->site);
        if (--t.while_stepping->left == 0) t.while_stepping.reset();
        if (!t.last_resume.step) {
            continue_after_stop(tid, t, t.while_stepping.has_value());
            return finish_stop_all();
        }
        // gdb asked for this step: reported like any other (the next resume steps on).
    }
    // (A stepped thread given a signal stops at its handler's entry with TRAP_UNK.)
    const auto* block_end = t.doing<RunningToBlockEnd>();
    if (block_end && (info.si_code == SI_KERNEL || info.si_code == TRAP_BRKPT)) {
        // The branch recorder's breakpoint at the end of the block: the thread is put back
        // onto the branch, which the next resume steps.
        auto s = registers_.snapshot(tid, false);
        const std::uint64_t at = s ? arch_.pc(**s) - arch_.pc_after_breakpoint(0) : 0;
        if (s && at == block_end->trap && !memory_->user_breakpoint_at(at)) {
            rewind_pc(tid, **s, at);
            BranchTraces::clear_block_end(t, memory_->breakpoints());
            continue_after_stop(tid, t, false);
            return finish_stop_all();
        }
    }
    if (t.is_doing<RecordStepping>() && info.si_code == TRAP_UNK) {
        if (auto* r = branch_traces_.find(tid)) r->software.entered_handler();
        single_step = true;
    }
    if (single_step && t.is_doing<RecordStepping>()) {
        // The branch recorder's step: on to the next, unless a watchpoint triggered on it.
        if (debug_points_.hw().any()) {
            if (auto ev = classify_trap(tid, info); ev && (ev->watch_addr || ev->hwbreak))
                return report(tid, t, *ev);
        }
        continue_after_stop(tid, t, false);
        return finish_stop_all();
    }
    if (info.si_code == SI_KERNEL || info.si_code == TRAP_BRKPT) {
        auto s = registers_.snapshot(tid, false);
        std::uint64_t at = s ? arch_.pc(**s) - arch_.pc_after_breakpoint(0) : 0;
        bool site = trap_sites_.has(at);
        bool stale =
            !site && trap_sites_.recently_removed(at) && !memory_->breakpoints().inserted_at(at);
        if (s && (site || stale)) {
            // Back onto the site's address. The thread itself is told below: by the resume
            // through the pad, or (staying stopped) by a write, so that a report or a detach
            // sees the real instruction boundary.
            arch_.set_pc(**s, at);
            TrapSites::SiteHit hit;
            if (site) hit = trap_sites_.hit(tid, at);
            bool passes = stale || (hit.consumed && !memory_->user_breakpoint_at(at));
            bool resumes = passes && running_ && !stopping_all_ && t.wants_run();
            // The handler may have removed this very site (the trace stopped during the hit:
            // pass count, full buffer, error), restoring the original instruction. The resume
            // then no longer goes through the pad, so the rewound pc must reach the thread
            // now, or it would run on from one byte into the instruction.
            bool removed = site && !trap_sites_.has(at);
            if (site) t.collected_at = at;
            if (!resumes || stale || removed) rewind_pc(tid, **s, at);
            if (passes) {
                if (hit.steps > 0)
                    t.while_stepping = WhileStepping{at, hit.steps};
                else
                    t.while_stepping.reset();
                continue_after_stop(tid, t, hit.steps > 0 || t.kernel.stepping());
                return finish_stop_all();
            }
            // gdb's breakpoint at the same place
            StopEvent ev = StopEvent::signal_stop(pid_, tid, SIGTRAP);
            ev.swbreak = true;
            return report_breakpoint_hit(tid, t, ev, at);
        }
    }
    if (single_step && t.last_resume.range_end > t.last_resume.range_start &&
        !debug_points_.hw().any()) {
        // Range stepping: stepping on inside the range saves gdb a round trip per line.
        auto pc = registers_.read_pc(tid);
        if (pc && t.last_resume.steps_on_at(*pc) && running_ && !stopping_all_ &&
            !memory_->user_breakpoint_at(*pc)) { // gdb's breakpoint stops it there
            continue_after_stop(tid, t, true);
            return finish_stop_all();
        }
    }
    if (auto ev = classify_trap(tid, info)) {
        // (A hardware breakpoint's hit during a step is reported as it is: passing it would
        // take a step from its pad.)
        if (ev->swbreak || (ev->hwbreak && !t.kernel.stepping()))
            if (auto pc = registers_.read_pc(tid)) return report_breakpoint_hit(tid, t, *ev, *pc);
        ev->step_done =
            single_step && t.kernel.stepping() && !ev->swbreak && !ev->hwbreak && !ev->watch_type;
        return report(tid, t, *ev);
    }
    return std::nullopt;
}

// The pad of a breakpoint evaluated in the program found its condition true: the thread goes
// on to the relocated instruction and stops there as if at the breakpoint instruction (its pc
// at the breakpoint, which gdb sees hit). A thread gdb steps from the breakpoint (through the
// pad) steps on past the trap: the step is not a hit. One whose breakpoint went meanwhile
// runs on.
std::optional<StopEvent> LinuxProcess::breakpoint_condition_held(pid_t tid, LinuxThread& t) {
    if (t.is_doing<SteppingFastJump>()) {
        fast_sites_.skip_breakpoint_trap(tid);
        if (!fast_sites_.finish_step(tid, t)) {
            continue_after_stop(tid, t, true);
            return finish_stop_all();
        }
        return report(tid, t, StopEvent::signal_stop(pid_, tid, SIGTRAP));
    }
    const auto site = fast_sites_.leave_breakpoint_entry(tid, t);
    if (!site) {
        fast_sites_.leave_pads(tid, t, false);
        if (t.pending) { // a signal it took on the way
            StopEvent ev = std::move(*t.pending);
            t.pending.reset();
            return report(tid, t, std::move(ev));
        }
        continue_after_stop(tid, t, t.kernel.stepping());
        return finish_stop_all();
    }
    spdlog::debug("thread {}: the condition of the breakpoint at 0x{:x} held in the program", tid,
                  *site);
    if (!memory_->user_breakpoint_at(*site)) {
        continue_after_stop(tid, t, t.kernel.stepping());
        return finish_stop_all();
    }
    StopEvent ev = StopEvent::signal_stop(pid_, tid, SIGTRAP);
    ev.swbreak = true;
    return report(tid, t, std::move(ev));
}

std::optional<StopEvent> LinuxProcess::report_breakpoint_hit(pid_t tid, LinuxThread& t,
                                                             StopEvent ev, std::uint64_t at) {
    if (debug_points_.reports_hit(*this, tid, at, ev.hwbreak)) return report(tid, t, std::move(ev));
    if (!ev.hwbreak && memory_->breakpoints().over_own_breakpoint(at))
        return skip_permanent_breakpoint(tid, t, at);
    // Not gdb's: the thread goes on past the breakpoint as it was going (a range step stops
    // after it, to be checked against the range), now or at the next resume.
    t.activity = PassingBreakpoint{at};
    continue_after_stop(tid, t, t.kernel.stepping());
    return finish_stop_all();
}

// gdb's breakpoint where no code may run (its call dummy's return, on a stack that is not
// executable) stops the thread with SIGSEGV or SIGILL, not SIGTRAP; gdb counts that as the
// breakpoint's hit (infrun.c), so it is reported even when gdb passes the signal.
bool LinuxProcess::fault_at_breakpoint(pid_t tid, int sig) {
    if (sig != SIGSEGV && sig != SIGILL) return false;
    auto pc = registers_.read_pc(tid);
    return pc && memory_->user_breakpoint_at(*pc);
}

// gdb's breakpoint on the program's own breakpoint instruction, its condition false: the
// instruction counts as run and the pc goes past it, as gdb skips a permanent breakpoint
// (infrun.c) and as gdbserver's step over it ends. (Run or stepped in place, it would trap
// again at once; its copy in a pad would trap there.) A step ends after it, but within a
// range gdb steps through.
std::optional<StopEvent> LinuxProcess::skip_permanent_breakpoint(pid_t tid, LinuxThread& t,
                                                                 std::uint64_t at) {
    const std::uint64_t after = at + arch_.breakpoint_instruction().size();
    auto regs = registers_.snapshot(tid, false);
    if (!regs) return report(tid, t, StopEvent::signal_stop(pid_, tid, SIGTRAP));
    arch_.set_pc(**regs, after);
    if (auto w = arch_.write_general_registers(tid, **regs); !w) {
        spdlog::warn("thread {}: cannot move past the breakpoint at 0x{:x}: {}", tid, at,
                     w.error().text);
        return report(tid, t, StopEvent::signal_stop(pid_, tid, SIGTRAP));
    }
    const bool stepping = t.kernel.stepping();
    if (stepping && !t.last_resume.steps_on_at(after))
        return report(tid, t, StopEvent::signal_stop(pid_, tid, SIGTRAP));
    continue_after_stop(tid, t, stepping);
    return finish_stop_all();
}

Status LinuxProcess::pass_gdb_breakpoint(pid_t tid, LinuxThread& t, bool& step) {
    const std::uint64_t addr = t.doing<PassingBreakpoint>()->addr;
    t.end<PassingBreakpoint>();
    auto pc = registers_.read_pc(tid);
    // Moved since (gdb wrote the pc), or the breakpoint is gone: nothing to pass.
    const bool hardware = !memory_->user_breakpoint_at(addr);
    if (!pc || *pc != addr || (hardware && !debug_points_.hw_breakpoint_with_code_at(addr)))
        return ok_status();
    // Through the instruction's copy, the breakpoint staying for the other threads (a step
    // there is one through the pad, back to the program's code after it). Not where a fast
    // tracepoint's jump is now (placed after the copy was made): the copy would go by its
    // collection, which the lifted breakpoint lets the thread into.
    const std::uint64_t pad = trap_sites_.passing_pad_made(addr);
    if (pad && (hardware || !fast_sites_.has(addr))) {
        auto regs = registers_.snapshot(tid, false);
        if (!regs) return regs.error();
        arch_.set_pc(**regs, pad);
        if (step) t.activity = SteppingThroughPad{addr};
        return arch_.write_general_registers(tid, **regs);
    }
    if (hardware) return ok_status(); // (made with its pad, gone with it: an exec)
    if (auto l = memory_->breakpoints().lift(addr); !l) return l;
    spdlog::debug("thread {}: stepping over gdb's breakpoint at 0x{:x}", tid, addr);
    t.activity = SteppingOverSite{addr, !step};
    step = true;
    return ok_status();
}

void LinuxProcess::rewind_pc(pid_t tid, arch::RegisterSnapshot& regs, std::uint64_t at) {
    arch_.set_pc(regs, at);
    if (auto w = arch_.write_general_registers(tid, regs); !w)
        spdlog::warn("thread {}: cannot rewind the pc to 0x{:x}: {}", tid, at, w.error().text);
}

std::optional<StopEvent> LinuxProcess::classify_trap(pid_t tid, const siginfo_t& info) {
    StopEvent ev = StopEvent::signal_stop(pid_, tid, SIGTRAP);
    if (info.si_code == TRAP_HWBKPT || (info.si_code == TRAP_TRACE && debug_points_.hw().any())) {
        if (auto hit = debug_points_.hw().triggered(tid)) {
            if (hit->type == 1)
                ev.hwbreak = true;
            else {
                ev.watch_addr = hit->addr;
                ev.watch_type = hit->type;
            }
            return ev;
        }
    }
    if (info.si_code == SI_KERNEL || info.si_code == TRAP_BRKPT) {
        auto s = registers_.snapshot(tid, false);
        if (s) {
            std::uint64_t pc = arch_.pc(**s);
            std::uint64_t bp = pc - (arch_.pc_after_breakpoint(0));
            if (memory_->breakpoints().inserted_at(bp)) {
                rewind_pc(tid, **s, bp);
                ev.swbreak = true;
            }
        }
    }
    return ev;
}

std::optional<StopEvent> LinuxProcess::no_resumed_event() {
    // (Non-stop: gdb keeps its own count of the threads it resumed.)
    if (!reports_.no_resumed || non_stop_ || !running_ || stopping_all_ || chosen_)
        return std::nullopt;
    for (const auto& [tid, t] : threads_)
        if (!t.kernel.stopped() || t.wants_run())
            return std::nullopt; // something still runs, or will
    running_ = false;
    StopEvent ev = StopEvent::signal_stop(pid_, pid_, 0);
    ev.no_resumed = true;
    return ev;
}

std::optional<StopEvent> LinuxProcess::report_created(pid_t tid, LinuxThread& t) {
    // QThreadEvents: the new thread stays stopped until gdb, told of it, resumes it.
    StopEvent ev = StopEvent::signal_stop(pid_, tid, SIGTRAP);
    ev.thread_created = true;
    return report(tid, t, std::move(ev));
}

std::optional<StopEvent> LinuxProcess::report(pid_t tid, LinuxThread& t, StopEvent ev) {
    choose(tid, t, std::move(ev));
    return finish_stop_all();
}

void LinuxProcess::choose(pid_t tid, LinuxThread& t, StopEvent ev) {
    if (non_stop_ && !stopping_all_) {
        report_alone(tid, t, std::move(ev));
        return;
    }
    if (chosen_ || stopping_all_ || !running_) {
        t.pending = std::move(ev);
        return;
    }
    chosen_ = std::move(ev);
    stopping_all_ = true;
    stop_running_threads(); // (the thread with the event is stopped already)
}

std::optional<StopEvent> LinuxProcess::finish_stop_all() {
    if (pausing_) return std::nullopt; // pause_all() waits for the threads itself
    if (!stopping_all_) return take_reported();
    if (!all_stopped(threads_)) return std::nullopt;
    fast_sites_.leave_pads(chosen_ ? chosen_->tid : 0);
    stopping_all_ = false;
    running_ = false;
    for (auto& [tid, t] : threads_) {
        t.gdb = GdbRequest::Stopped;
        // (A block end's breakpoint is not left in the code while gdb looks at it or patches it.)
        BranchTraces::clear_block_end(t, memory_->breakpoints());
    }
    auto ev = *chosen_;
    chosen_.reset();
    return ev;
}

} // namespace tpagent::process
