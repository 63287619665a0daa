// One traced Linux process and its threads, driven over ptrace (see process/target.hpp for what
// each operation promises).
#pragma once
#include "arch/arch.hpp"
#include "arch/hw_points.hpp"
#include "base/result.hpp"
#include "process/linux/address_space.hpp"
#include "process/linux/branch_traces.hpp"
#include "process/linux/fork_children.hpp"
#include "process/linux/linux_fast_sites.hpp"
#include "process/linux/linux_thread.hpp"
#include "process/linux/wait_status.hpp"
#include "process/linux/perf_branch_trace.hpp"
#include "process/linux/software_breakpoints.hpp"
#include "process/target.hpp"
#include <cstdint>
#include <deque>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <set>
#include <unordered_map>
#include <csignal>
#include <span>
#include <string>
#include <sys/types.h>
#include <vector>

namespace tpagent::process {

class LinuxProcess final : public Target {
  public:
    static Result<std::unique_ptr<LinuxProcess>> launch(const LaunchSpec& spec);
    static Result<std::unique_ptr<LinuxProcess>> attach(pid_t pid);
    ~LinuxProcess() override;
    LinuxProcess(const LinuxProcess&) = delete;
    LinuxProcess& operator=(const LinuxProcess&) = delete;

    pid_t pid() const override { return pid_; }
    bool was_attached() const override { return attached_; }
    bool alive() const override { return alive_; }
    bool running() const override { return running_; }
    const std::string& executable() const override { return executable_; }
    std::vector<StaticMarker> static_markers() const override;

    std::vector<pid_t> thread_ids() const override;
    bool has_thread(pid_t tid) const override { return threads_.count(tid) != 0; }
    std::string thread_name(pid_t tid) const override;

    Result<std::vector<std::uint8_t>> read_registers(pid_t tid, std::vector<bool>& available,
                                                     bool full = true) override;
    Status write_registers(pid_t tid, std::span<const std::uint8_t> g) override;
    Status write_register(pid_t tid, int regnum, std::span<const std::uint8_t> value) override;
    Result<std::uint64_t> read_pc(pid_t tid) override;
    Result<std::vector<std::uint8_t>> read_siginfo(pid_t tid) override;
    Status write_siginfo(pid_t tid, std::span<const std::uint8_t> siginfo) override;

    Result<std::size_t> read_memory(std::uint64_t addr, std::span<std::uint8_t> out) override;
    Status write_memory(std::uint64_t addr, std::span<const std::uint8_t> data) override;

    Status insert_user_breakpoint(std::uint64_t addr) override;
    Status remove_user_breakpoint(std::uint64_t addr) override;
    bool user_breakpoint_at(std::uint64_t addr) const override {
        return memory_->user_breakpoint_at(addr);
    }
    const SoftwareBreakpoints& breakpoints() const { return memory_->breakpoints(); }

    void set_site_handlers(SiteHitHandler hit, SiteStepHandler step) override {
        on_site_hit_ = std::move(hit);
        on_site_step_ = std::move(step);
    }
    Status add_site(std::uint64_t addr) override;
    void remove_site(std::uint64_t addr) override;
    void remove_all_sites() override;
    bool has_site(std::uint64_t addr) const override { return sites_.count(addr) != 0; }

    FastSites& fast_sites() override { return fast_sites_; }
    Status map_now(std::uint64_t addr, std::uint64_t length) override;
    Status load_library(const std::string& path) override;

    Status insert_hw_point(int type, std::uint64_t addr, std::uint64_t len) override;
    Status remove_hw_point(int type, std::uint64_t addr, std::uint64_t len) override;

    Result<std::optional<StopEvent>> resume(const std::vector<ThreadResume>& actions) override;
    std::optional<StopEvent> poll() override;
    Status resume_all() override;
    std::optional<StopEvent> stop_all_now() override;
    Status set_non_stop(bool on) override;
    bool thread_stopped(pid_t tid) const override {
        auto it = threads_.find(tid);
        return it != threads_.end() && !it->second.wants_run;
    }
    void stop_threads(const std::vector<pid_t>& tids) override;
    Status pause_all() override;
    void unpause_all() override;
    void interrupt() override;
    void set_pass_signals(std::set<int> signals) override { pass_signals_ = std::move(signals); }
    void set_catch_syscalls(std::optional<std::set<int>> syscalls) override {
        catch_syscalls_ = std::move(syscalls); // gdb clears it at each stop and sends it again
    }
    void set_event_reports(EventReports reports) override { reports_ = reports; }
    bool is_fork_child(pid_t pid) const override { return fork_children_.held(pid); }
    std::vector<pid_t> fork_children() const override { return fork_children_.list(); }
    bool release_fork_child(pid_t pid) override;
    bool kill_fork_child(pid_t pid) override;
    std::unique_ptr<Target> take_fork_child(pid_t pid = 0) override;
    void when_memory_unshared(std::function<void(BreakpointBytes)> hand_back) override {
        memory_unshared_ = std::move(hand_back);
    }
    void take_breakpoints(const BreakpointBytes& breakpoints) override;
    void set_exec_handler(std::function<void()> handler) override { on_exec_ = std::move(handler); }

    Result<BranchTraceConfig> enable_branch_trace(pid_t tid,
                                                  const BranchTraceRequest& request) override;
    Status disable_branch_trace(pid_t tid) override;
    Result<BranchTraceConfig> branch_trace_config(pid_t tid) const override;
    Result<std::vector<BranchBlock>> read_branch_trace(pid_t tid, BranchTraceRead kind) override;

    Status kill() override;
    Status detach() override;

  private:
    struct Site {
        std::uint64_t pad = 0; // 0: no pad, the instruction is stepped over in place
        arch::Relocated code;
    };
    // Refused where a trap or a jump at addr would change what the program does
    // (Architecture::interruption_hazard); `stepped`: the instruction is stepped there.
    Status check_interruptible(std::uint64_t addr, bool stepped = false);
    void publish_code_patches() const;
    // Collects a trap site's hit for a thread about to leave its address without having run
    // the breakpoint (it stepped onto it, or was stopped there).
    void collect_unrun_site(pid_t tid, LinuxThread& t, std::uint64_t pc, bool& step);
    explicit LinuxProcess(pid_t pid, bool attached);
    Status finish_setup();
    // The cached registers of a stopped thread; `full` also fetches the vector/FP state.
    Result<arch::RegisterSnapshot*> snapshot(pid_t tid, bool full = true);
    // Ok if `tid` is a thread of ours, stopped.
    Status check_stopped(pid_t tid) const;
    Status resume_thread(pid_t tid, LinuxThread& t, bool step, int signal);
    std::optional<StopEvent> handle_status(pid_t tid, WaitStatus status);
    std::optional<StopEvent> handle_stop(pid_t tid, LinuxThread& t, WaitStatus status);
    std::optional<StopEvent> handle_trap(pid_t tid, LinuxThread& t);
    std::optional<StopEvent> handle_syscall_stop(pid_t tid, LinuxThread& t);
    // Puts the pc back onto the breakpoint at `at` the thread has just executed.
    void rewind_pc(pid_t tid, arch::RegisterSnapshot& regs, std::uint64_t at);
    std::optional<StopEvent> classify_trap(pid_t tid, const siginfo_t& info);
    bool finish_pad_step(pid_t tid, LinuxThread& t);
    void end_step_over(pid_t tid, LinuxThread& t);
    // After a ptrace event stop (clone, fork, vfork done): run on, or on to the stop-all's
    // SIGSTOP.
    void continue_after_event(pid_t tid, LinuxThread& t, bool keep_running);
    // A child the program forked: its copy of the code loses every breakpoint and jump, and it
    // runs on untraced (gdb's detach-on-fork). A vfork child shares the parent's memory: the
    // breakpoints are lifted until the parent's PTRACE_EVENT_VFORK_DONE.
    void release_child(pid_t child, bool vfork);
    // As release_child, but the child stays stopped, held for gdb (fork-events): cleaned, or
    // for a vfork child (sharing the parent's memory) left as it is until gdb lets it go.
    void hold_child(pid_t child, bool vfork);
    // Puts back the original code in a forked child's copy of the program.
    void clean_child(pid_t child);
    ForkChildren fork_children_;
    void release_held_children();
    bool is_new_process(pid_t tid) const;
    // The thread that speaks for the process: its leader while it lives, else another; 0 with
    // none.
    pid_t lead_thread() const {
        return threads_.count(pid_) ? pid_ : threads_.empty() ? 0 : threads_.begin()->first;
    }
    // The thread to run an injected system call or function: the lead, else another, but not
    // one stopped at a system call's entry (its own call would be lost); 0 with none.
    pid_t injection_thread() const {
        const pid_t lead = lead_thread();
        if (lead == 0 || !threads_.at(lead).at_syscall_entry) return lead;
        for (const auto& [tid, t] : threads_)
            if (!t.at_syscall_entry) return tid;
        return 0;
    }
    // A vfork child (taken as a target by gdb): hands gdb's breakpoints to its parent.
    std::function<void(BreakpointBytes)> memory_unshared_;
    bool vfork_child_ = false; // shares its parent's memory until it execs or exits
    // A vfork child runs in this process's memory (from the vfork event to vfork-done): no
    // breakpoint of the branch recorder's may go there, the child would meet it.
    bool vfork_running_ = false;
    void unshare_memory();
    // A trap site's displaced instruction, relocated into a pad near `addr`.
    Result<Site> place_displaced(std::uint64_t addr, std::span<const std::uint8_t> code);
    void continue_after_stop(pid_t tid, LinuxThread& t, bool step);
    // Runs a system call in a stopped thread; its -errno result is an error "WHAT: reason".
    Result<std::uint64_t> inject_syscall(pid_t tid, long number,
                                         std::span<const std::uint64_t> args,
                                         std::string_view what);
    // Calls function(args) in a stopped thread, which returns onto a breakpoint at `landing`;
    // the thread's registers are put back after. The function's result.
    Result<std::uint64_t> inject_call(pid_t tid, std::uint64_t function,
                                      std::span<const std::uint64_t> args, std::uint64_t landing);
    // After a thread exited: the event saying no resumed thread is left, if that is so.
    std::optional<StopEvent> no_resumed_event();
    std::optional<StopEvent> report(pid_t tid, LinuxThread& t, StopEvent ev);
    std::optional<StopEvent> report_created(pid_t tid, LinuxThread& t);
    // A thread of the program stopped by signal `sig`.
    StopEvent signal_event(pid_t tid, int sig) const {
        StopEvent ev;
        ev.pid = pid_;
        ev.tid = tid;
        ev.signal = sig;
        return ev;
    }
    // report() without finishing: the event is chosen (or held back) and the others stopped.
    void choose(pid_t tid, LinuxThread& t, StopEvent ev);
    // Non-stop: the thread stays stopped with its event, which poll() hands out in turn.
    void report_alone(pid_t tid, LinuxThread& t, StopEvent ev);
    // Non-stop: the next event to hand out, if any (none while a pause is on).
    std::optional<StopEvent> take_reported();
    // SIGSTOP to every thread that runs and has none on its way.
    void stop_running_threads();
    // The next wait status of any of the program's threads (blocking); false on an error.
    bool wait_next(pid_t& tid, WaitStatus& status);
    bool all_stopped() const {
        for (const auto& [tid, t] : threads_)
            if (!t.stopped) return false;
        return true;
    }
    bool others_running(pid_t tid) const {
        for (const auto& [other, t] : threads_)
            if (other != tid && !t.stopped) return true;
        return false;
    }
    bool any_wants_run() const {
        for (const auto& [tid, t] : threads_)
            if (t.wants_run) return true;
        return false;
    }
    // Forgets everything placed in the process image (exec, death): nothing is written back.
    void forget_image();
    std::optional<StopEvent> finish_stop_all();
    void add_thread(pid_t tid, bool awaiting_first_stop);
    bool pending_still_valid(pid_t tid, LinuxThread& t);
    void mark_dead();

    pid_t pid_;
    bool attached_;
    bool alive_ = true;
    bool running_ = false;      // resumed and no stop reported since
    bool stopping_all_ = false; // an event is chosen; waiting for the other threads to stop
    std::optional<StopEvent> chosen_;
    bool non_stop_ = false;
    std::deque<StopEvent> reported_; // non-stop: events for poll() to hand out, in order
    int pause_depth_ = 0;            // pause_all() calls not yet undone
    bool pausing_ = false;           // stopping every thread for a pause (no event is chosen)
    std::string executable_;
    std::map<pid_t, LinuxThread> threads_;
    std::set<int> pass_signals_;
    std::optional<std::set<int>> catch_syscalls_; // resumes use PTRACE_SYSCALL while set
    EventReports reports_;
    arch::HwPoints hw_points_;
    std::map<std::uint64_t, Site> sites_;
    std::set<std::uint64_t> recently_removed_sites_; // traps already taken may still arrive
    std::function<void()> on_exec_;
    SiteHitHandler on_site_hit_;
    SiteStepHandler on_site_step_;
    const arch::Architecture& arch_;
    // (After arch_, which gives it the breakpoint instruction; its breakpoints call back into
    // publish_code_patches.)
    std::unique_ptr<AddressSpace> memory_;
    BranchTraces branch_traces_; // (after arch_, which decodes its instructions)
    // What the fast sites ask of this process.
    class FastSiteAccess final : public FastSiteProcess {
      public:
        explicit FastSiteAccess(LinuxProcess& process) : p_(process) {}
        pid_t pid() const override { return p_.pid_; }
        bool alive() const override { return p_.alive_; }
        bool at_rest() const override { return !p_.running_ && !p_.stopping_all_; }
        Result<arch::RegisterSnapshot*> registers(pid_t tid) override {
            return p_.snapshot(tid, false);
        }
        Result<std::size_t> read_program(std::uint64_t addr, std::span<std::uint8_t> out) override {
            return p_.read_memory(addr, out);
        }
        Status check_interruptible(std::uint64_t addr) override {
            return p_.check_interruptible(addr);
        }
        void code_patched() override { p_.publish_code_patches(); }
        bool trap_site_at(std::uint64_t addr) const override;
        bool trap_pads_in_use() const override;
        std::optional<std::uint64_t> out_of_trap_pad(LinuxThread& t, std::uint64_t pc) override;
        pid_t injection_thread() const override { return p_.injection_thread(); }
        Result<std::uint64_t> inject_syscall(pid_t tid, long number,
                                             std::span<const std::uint64_t> args,
                                             std::string_view what) override {
            return p_.inject_syscall(tid, number, args, what);
        }

      private:
        LinuxProcess& p_;
    };
    FastSiteAccess fast_site_access_{*this};
    // (After memory_ and threads_, which it works on.)
    LinuxFastSites fast_sites_{arch_, *memory_, threads_, fast_site_access_};
};

} // namespace tpagent::process
