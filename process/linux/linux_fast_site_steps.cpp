// tpagent's own steps of a thread through fast tracepoints' code: a gdb step over a jump runs
// its pad and collector, a fault of the collector's copy is recovered, and threads stopped in
// pads or the collector are taken back to the program's code before gdb sees them.
#include "process/linux/linux_fast_sites.hpp"
#include "process/linux/wait_status.hpp"
#include <csignal>
#include <spdlog/spdlog.h>
#include <sys/ptrace.h>
#include <sys/wait.h>

namespace tpagent::process {

using thread_activity::SteppingFastJump;

namespace {
// A single step over a fast tracepoint runs its pad and collector one instruction at a time;
// past this many, something keeps the thread from the displaced instruction (a loop waiting
// for tpagent, say) and the step is reported where it is.
constexpr std::uint64_t kMaxFastStepInstructions = 200000;
// wait_own_resume: the thread stopped on a fault of the collector's copy, now recovered.
constexpr int kRecoveredFault = -1;
// Instructions a thread may take to get out of a pad and the collector (a collector waiting
// inside a system call or the vDSO could take long one step at a time).
constexpr std::uint64_t kMaxPadExitInstructions = 200000;
} // namespace

// One instruction of a single step over a fast tracepoint's jump has run. True once the
// displaced instruction has (the pc is put back into the program's code); false to step on.
bool LinuxFastSites::finish_step(pid_t tid, LinuxThread& t) {
    SteppingFastJump& step = *t.doing<SteppingFastJump>();
    auto site = sites_.find(step.site);
    auto s = process_.registers(tid);
    if (site == sites_.end() || !s || ++step.steps > kMaxFastStepInstructions) {
        if (s && site != sites_.end())
            spdlog::warn("thread {}: step over the fast tracepoint at 0x{:x} stopped after {} "
                         "instructions in its pad",
                         tid, site->first, step.steps - 1);
        t.end<SteppingFastJump>();
        return true;
    }
    const FastSite& f = site->second;
    const std::uint64_t pc = arch_.pc(**s);
    const std::uint64_t relocated = f.pad + f.relocated_offset;
    if (!step.in_copy) {
        step.in_copy = pc == relocated; // the collector is done; next: the instruction
        return false;
    }
    if (arch::in_relocated(f.code, relocated, pc)) {
        auto back = arch::original_address(f.code, relocated, site->first, pc);
        if (!back) return false; // within the instructions one original became
        arch_.set_pc(**s, *back);
        if (auto w = arch_.write_general_registers(tid, **s); !w)
            spdlog::warn("thread {}: cannot move the pc out of a pad: {}", tid, w.error().text);
    } // else a branch left the pad: the pc is already the program's
    t.end<SteppingFastJump>();
    return true;
}

// A step over a jump that displaces several instructions (x86-64, a short one at its
// address) ends with the pc at the next of them, inside the jump's bytes, as gdb expects to
// see it: before the thread runs again, it goes to that instruction's copy in the pad, and a
// step from there comes back as finish_step brings back any.
Status LinuxFastSites::resume_inside_jump(pid_t tid, LinuxThread& t, bool step) {
    auto s = process_.registers(tid);
    if (!s) return s.error();
    const std::uint64_t pc = arch_.pc(**s);
    const auto inside = covering(pc);
    if (!inside || inside->site == pc) return ok_status();
    const FastSite& site = sites_.at(inside->site);
    const auto off = arch::pad_offset_of(site.code, pc - inside->site);
    if (!off)
        return make_error(ErrorCode::NotAllowed,
                          fmt::format("thread {}: its pc 0x{:x} is inside the jump at 0x{:x}, "
                                      "between two of the instructions it displaces",
                                      tid, pc, inside->site));
    arch_.set_pc(**s, site.pad + site.relocated_offset + *off);
    if (auto w = arch_.write_general_registers(tid, **s); !w) return w;
    spdlog::debug("thread {}: resumes at 0x{:x} from its copy in the pad of 0x{:x}", tid, pc,
                  inside->site);
    if (step) t.activity = SteppingFastJump{inside->site, true, 0};
    return ok_status();
}

bool LinuxFastSites::recover_collector_fault(pid_t tid) {
    if (!agent_code_) return false;
    auto s = process_.registers(tid);
    if (!s) return false;
    const std::uint64_t pc = arch_.pc(**s);
    std::optional<std::uint64_t> resume;
    if (pc >= agent_code_->copy_begin && pc < agent_code_->copy_end)
        resume = agent_code_->copy_fault;
    // A pad that copies ranges in line: its frame is dropped, and counted (inline_collection).
    for (const auto& [addr, site] : sites_)
        if (site.copy && pc >= site.pad + site.copy->begin && pc < site.pad + site.copy->end)
            resume = site.pad + site.copy->fault;
    if (!resume) return false;
    arch_.set_pc(**s, *resume);
    if (auto w = arch_.write_general_registers(tid, **s); !w) {
        spdlog::warn("thread {}: cannot recover the collector's fault: {}", tid, w.error().text);
        return false;
    }
    spdlog::debug("thread {}: collector read unmapped memory at pc 0x{:x}: recovered", tid, pc);
    return true;
}

void LinuxFastSites::skip_breakpoint_trap(pid_t tid) {
    auto s = process_.registers(tid);
    if (!s) return;
    arch_.set_pc(**s, agent_code_->breakpoint_trap + arch_.breakpoint_instruction().size());
    if (auto w = arch_.write_general_registers(tid, **s); !w)
        spdlog::warn("thread {}: cannot move past the breakpoint entry's trap: {}", tid,
                     w.error().text);
}

std::optional<std::uint64_t> LinuxFastSites::leave_breakpoint_entry(pid_t tid, LinuxThread& t) {
    // Past the trap (arm64's brk leaves the pc on it), then the entry's return and the pad's
    // restoring of the registers: tens of instructions.
    skip_breakpoint_trap(tid);
    for (std::uint64_t n = 0; n < kMaxPadExitInstructions; ++n) {
        auto s = process_.registers(tid);
        if (!s) return std::nullopt;
        const std::uint64_t pc = arch_.pc(**s);
        for (const auto& [addr, site] : sites_)
            if (site.call.carries_breakpoint && pc == site.pad + site.relocated_offset) {
                arch_.set_pc(**s, addr);
                if (auto w = arch_.write_general_registers(tid, **s); !w) return std::nullopt;
                return addr;
            }
        if (!in_tpagent_code(pc)) return std::nullopt; // (a jump back before its copy?)
        if (ptrace(PTRACE_SINGLESTEP, tid, nullptr, nullptr) != 0) return std::nullopt;
        // (Another signal meanwhile is the thread's pending event, for after the hit.)
        if (wait_own_resume(tid, t) == 0) return std::nullopt;
    }
    return std::nullopt;
}

bool LinuxFastSites::in_tpagent_code(std::uint64_t pc) const {
    return in_agent_code(pc) || pad_pages_.contains(pc);
}

void LinuxFastSites::leave_pads(pid_t chosen) {
    if (pad_pages_.empty()) return;
    for (auto& [tid, t] : threads_)
        leave_pads(tid, t, t.pending || tid == chosen);
}

// Waits for the stop of a thread tpagent resumed itself: its signal, or 0 when it is gone (a
// thread killed from outside takes its status with it; its process's end is still seen
// through the main thread). A fault of the collector's copy is recovered (the thread goes on
// from the copy's fault path); any other signal but SIGTRAP came meanwhile: the thread's event
// for later.
int LinuxFastSites::wait_own_resume(pid_t tid, LinuxThread& t) {
    t.regs.reset();
    WaitStatus status;
    if (wait_thread(tid, status, __WALL) != tid || !status.stopped()) return 0;
    const int sig = status.stop_signal();
    if ((sig == SIGSEGV || sig == SIGBUS) && recover_collector_fault(tid)) {
        t.regs.reset();
        return kRecoveredFault;
    }
    if (sig != SIGTRAP && sig != SIGSTOP)
        t.pending = StopEvent::signal_stop(process_.pid(), tid, sig);
    if (sig == SIGSTOP) t.took_own_sigstop(); // none is on its way now
    return sig;
}

// Runs a stopped thread (the others stay stopped) to `addr` with a breakpoint there.
bool LinuxFastSites::run_to(pid_t tid, LinuxThread& t, std::uint64_t addr) {
    if (auto s = memory_.breakpoints().insert(addr); !s) return false;
    bool arrived = false;
    for (;;) {
        if (ptrace(PTRACE_CONT, tid, nullptr, nullptr) != 0) break;
        const int sig = wait_own_resume(tid, t);
        if (sig == kRecoveredFault) continue; // the copy read short; on to the return
        if (sig == SIGTRAP) {
            auto s = process_.registers(tid);
            if (s && arch_.pc(**s) == arch_.pc_after_breakpoint(addr)) {
                arch_.set_pc(**s, addr);
                arrived = static_cast<bool>(arch_.write_general_registers(tid, **s));
            }
        }
        break;
    }
    t.regs.reset();
    if (auto s = memory_.breakpoints().remove(addr); !s)
        spdlog::warn("thread {}: cannot remove the breakpoint at 0x{:x}: {}", tid, addr,
                     s.error().text);
    return arrived;
}

// A thread stopped by all-stop inside a pad or the collector runs on alone, to the collector's
// return with a breakpoint, then one instruction at a time, to the next instruction boundary
// of the program's own code: what it was doing anyway. A thread with an event of its own (a
// signal it got there) is only moved back if it stands on an instruction boundary; running it
// could raise the signal again.
void LinuxFastSites::leave_pads(pid_t tid, LinuxThread& t, bool has_event) {
    bool ran_to_return = false;
    for (std::uint64_t n = 0; n < kMaxPadExitInstructions; ++n) {
        auto s = process_.registers(tid);
        if (!s) return;
        const std::uint64_t pc = arch_.pc(**s);
        // A dprintf that found the agent's ring full (no record): the ring emptied, as at any
        // other stop there (LinuxProcess::handle_trap), it goes on past its trap and writes.
        const bool ring_full = at_breakpoint_trap(pc) && arch_.first_argument(**s) == 0;
        if (ring_full) {
            process_.read_agent_ring();
            skip_breakpoint_trap(tid);
        }
        if (!has_event && !ring_full && at_breakpoint_trap(pc)) {
            // A breakpoint's condition held on the way out: the thread stops at it, the hit
            // its event.
            const auto site = leave_breakpoint_entry(tid, t);
            if (site && !t.pending) {
                StopEvent ev = StopEvent::signal_stop(process_.pid(), tid, SIGTRAP);
                ev.swbreak = true;
                t.pending = ev;
            }
            if (site || t.pending) break;
            continue; // (its breakpoint gone: out of the pad as any thread)
        }
        std::optional<std::uint64_t> back = process_.out_of_trap_pad(t, pc);
        for (const auto& [addr, site] : sites_) {
            // At the site itself the collector has run and the instruction has not: step it,
            // unless the thread must not run (back at the jump, it would collect once more).
            auto at = arch::original_address(site.code, site.pad + site.relocated_offset, addr, pc);
            if (at && (*at != addr || has_event)) back = at;
        }
        // Between a short jump and its slot's jump nothing has run: back to the tracepoint.
        for (const auto& [at, slot] : slots_)
            if (pc == at) back = slot.site;
        if (back) {
            arch_.set_pc(**s, *back);
            if (auto w = arch_.write_general_registers(tid, **s); !w)
                spdlog::warn("thread {}: cannot move the pc out of a pad: {}", tid, w.error().text);
            else
                spdlog::debug("thread {}: out of tpagent's code, 0x{:x} -> 0x{:x}", tid, pc, *back);
            break;
        }
        std::optional<std::uint64_t> collector_return;
        if (agent_code_ && agent_code_->collector_frame)
            if (auto frame = agent_code_->collector_frame(arch_.sp(**s))) {
                std::uint64_t back = 0;
                auto got = process_.read_program(
                    *frame - 8, std::span(reinterpret_cast<std::uint8_t*>(&back), 8));
                collector_return = got && *got == 8 ? back : 0;
            }
        if ((!in_tpagent_code(pc) && !collector_return) || has_event) break;
        // (Not while other threads run, in non-stop mode: they would stop there too.)
        if (collector_return && *collector_return && !ran_to_return &&
            !others_running(threads_, tid)) {
            // Stepping out of a hit takes thousands of steps (tens of milliseconds), and a
            // thread stamped but not yet at its clock would read it that late.
            ran_to_return = true;
            if (!run_to(tid, t, *collector_return)) break;
            spdlog::debug("thread {}: ran out of the collector to 0x{:x}", tid, *collector_return);
            continue;
        }
        if (ptrace(PTRACE_SINGLESTEP, tid, nullptr, nullptr) != 0) break;
        if (const int sig = wait_own_resume(tid, t); sig != SIGTRAP && sig != kRecoveredFault)
            break;
    }
    // A gdb step it was in the middle of has been done.
    t.end<thread_activity::SteppingThroughPad>();
    t.end<thread_activity::SteppingFastJump>();
}

} // namespace tpagent::process
