// One traced Linux process and its threads, driven over ptrace (see process/target.hpp for what
// each operation promises).
#pragma once
#include "arch/arch.hpp"
#include "base/result.hpp"
#include "process/linux/address_space.hpp"
#include "process/linux/branch_traces.hpp"
#include "process/linux/linux_debug_points.hpp"
#include "process/linux/linux_fast_sites.hpp"
#include "process/linux/linux_fork_children.hpp"
#include "process/linux/linux_registers.hpp"
#include "process/linux/linux_thread.hpp"
#include "process/linux/remote_calls.hpp"
#include "process/linux/linux_trap_sites.hpp"
#include "process/linux/wait_router.hpp"
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

class LinuxProcess final : public Target, private WaitRouter::Owner {
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
    Result<std::uint64_t> thread_local_address(pid_t tid, std::uint64_t offset,
                                               std::uint64_t link_map) override;
    std::optional<std::string> library_list() override;

    std::vector<pid_t> thread_ids() const override;
    bool has_thread(pid_t tid) const override { return threads_.count(tid) != 0; }
    std::string thread_name(pid_t tid) const override;

    ThreadRegisters& registers() override { return registers_; }

    Result<std::size_t> read_memory(std::uint64_t addr, std::span<std::uint8_t> out) override;
    std::uint64_t read_only_image_extent(std::uint64_t addr, std::uint64_t length) override;
    Status write_memory(std::uint64_t addr, std::span<const std::uint8_t> data) override;

    DebugPoints& debug_points() override { return debug_points_; }

    TrapSites& trap_sites() override { return trap_sites_; }

    FastSites& fast_sites() override { return fast_sites_; }
    Status map_now(std::uint64_t addr, std::uint64_t length) override {
        return remote_calls_.map_now(addr, length);
    }
    Status load_library(const std::string& path) override {
        return remote_calls_.load_library(path);
    }
    Status place_agent_image(const std::string& path) override {
        return remote_calls_.place_agent_image(path);
    }

    Result<std::optional<StopEvent>> resume(const std::vector<ThreadResume>& actions) override;
    std::optional<StopEvent> poll() override;
    Status resume_all() override;
    std::optional<StopEvent> stop_all_now() override;
    Status set_non_stop(bool on) override;
    bool thread_stopped(pid_t tid) const override {
        auto it = threads_.find(tid);
        return it != threads_.end() && !it->second.wants_run();
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
    LinuxForkChildren& fork_children() override { return fork_children_; }
    // Called with a traced process's pid when its end is seen, before it is reaped, while
    // several processes are traced (WaitRouter::before_process_end); nullptr: none.
    static void before_process_end(std::function<void(pid_t)> hook) {
        WaitRouter::instance().before_process_end(std::move(hook));
    }
    // A forked child held stopped for gdb, taken as a process of its own.
    static std::unique_ptr<LinuxProcess> forked_child(pid_t child);
    void set_exec_handler(std::function<void()> handler) override { on_exec_ = std::move(handler); }

    BranchTracing& branch_tracing() override { return branch_traces_; }

    Status kill() override;
    Status detach() override;

  private:
    // WaitRouter::Owner: its threads, and those of the children it holds or follows.
    pid_t owner_pid() const override { return pid_; }
    bool owns(pid_t tid) const override {
        return tid == pid_ || threads_.count(tid) != 0 || fork_children_.claims(tid);
    }
    // Refused where a trap or a jump at addr would change what the program does
    // (Architecture::interruption_hazard); `stepped`: the instruction is stepped there.
    Status check_interruptible(std::uint64_t addr, bool stepped = false);
    // Refused where no trap site may go: inside a fast tracepoint's jump, or where
    // check_interruptible refuses it.
    Status check_site_address(std::uint64_t addr, bool stepped);
    void publish_code_patches() const;
    explicit LinuxProcess(pid_t pid, bool attached);
    Status finish_setup();
    Status resume_thread(pid_t tid, LinuxThread& t, bool step, int signal);
    std::optional<StopEvent> handle_status(pid_t tid, WaitStatus status);
    std::optional<StopEvent> handle_stop(pid_t tid, LinuxThread& t, WaitStatus status);
    std::optional<StopEvent> handle_trap(pid_t tid, LinuxThread& t);
    std::optional<StopEvent> breakpoint_condition_held(pid_t tid, LinuxThread& t);
    std::optional<StopEvent> handle_syscall_stop(pid_t tid, LinuxThread& t);
    // Whether all of out.size() bytes at addr could be read.
    bool read_all(std::uint64_t addr, std::span<std::uint8_t> out);
    // qGetTLSAddr's parts (thread_local_storage.cpp): a little-endian word of `bytes` bytes,
    // and the TLS module of a link map: its id, and whose layout (musl's, or glibc's).
    Result<std::uint64_t> read_word(std::uint64_t addr, std::size_t bytes);
    struct TlsModule {
        std::uint64_t id = 0;
        bool musl = false;
    };
    Result<TlsModule> tls_module(std::uint64_t link_map);
    // Which C library keeps the program's TLS, from its symbols: glibc's description of a
    // link map's module id (its address), or musl. Read once per image (forget_image).
    struct TlsLayout {
        std::optional<std::uint64_t> glibc_module_id; // _thread_db_link_map_l_tls_modid
        bool musl = false;
    };
    TlsLayout tls_layout();
    // Puts the pc back onto the breakpoint at `at` the thread has just executed.
    void rewind_pc(pid_t tid, arch::RegisterSnapshot& regs, std::uint64_t at);
    std::optional<StopEvent> classify_trap(pid_t tid, const siginfo_t& info);
    // gdb's software breakpoint at `at` stopped the thread (its pc back on it): reported,
    // unless the breakpoint's condition does not hold or its commands ran (Z0 options).
    std::optional<StopEvent> report_breakpoint_hit(pid_t tid, LinuxThread& t, StopEvent ev,
                                                   std::uint64_t at);
    // A SIGSEGV or SIGILL of the thread at one of gdb's breakpoints.
    bool fault_at_breakpoint(pid_t tid, int sig);
    // A thread at a permanent breakpoint whose hit is not gdb's goes past it.
    std::optional<StopEvent> skip_permanent_breakpoint(pid_t tid, LinuxThread& t, std::uint64_t at);
    // A PassingBreakpoint thread's resume: over the lifted breakpoint by a step.
    Status pass_gdb_breakpoint(pid_t tid, LinuxThread& t, bool& step);
    // After a ptrace event stop (clone, fork, vfork done): run on, or on to the stop-all's
    // SIGSTOP.
    void continue_after_event(pid_t tid, LinuxThread& t, bool keep_running);
    // Puts back the original code in a forked child's copy of the program.
    void clean_child(pid_t child, bool jumps);
    // A vfork child runs in this process's memory (from the vfork event to vfork-done): no
    // breakpoint of the branch recorder's may go there, the child would meet it.
    bool vfork_running_ = false;
    void continue_after_stop(pid_t tid, LinuxThread& t, bool step);
    // After a thread exited: the event saying no resumed thread is left, if that is so.
    std::optional<StopEvent> no_resumed_event();
    std::optional<StopEvent> report(pid_t tid, LinuxThread& t, StopEvent ev);
    std::optional<StopEvent> report_created(pid_t tid, LinuxThread& t);
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
    LinuxThreads threads_;
    std::set<int> pass_signals_;
    // New threads whose first stop came before their parent's clone event: that event must
    // not add them again (one may have run and exited meanwhile, and would wait for ever
    // for a first stop it has had).
    std::set<pid_t> seen_before_clone_;
    std::optional<TlsLayout> tls_layout_;         // (tls_layout)
    std::optional<std::set<int>> catch_syscalls_; // resumes use PTRACE_SYSCALL while set
    EventReports reports_;
    std::function<void()> on_exec_;
    const arch::Architecture& arch_;
    // (After arch_, which gives it the breakpoint instruction; its breakpoints call back into
    // publish_code_patches.)
    std::unique_ptr<AddressSpace> memory_;
    // (After arch_, threads_ and memory_, which they use.)
    LinuxTrapSites trap_sites_;
    BranchTraces branch_traces_;
    LinuxRegisters registers_; // (after threads_, arch_ and branch_traces_, which it uses)
    RemoteCalls remote_calls_; // (after registers_ and memory_, which it uses)
    // (After memory_, the memory the children's parent has.)
    LinuxForkChildren fork_children_;
    // What the fast sites ask of this process.
    class FastSiteAccess final : public FastSiteProcess {
      public:
        explicit FastSiteAccess(LinuxProcess& process) : p_(process) {}
        pid_t pid() const override { return p_.pid_; }
        bool alive() const override { return p_.alive_; }
        bool at_rest() const override { return !p_.running_ && !p_.stopping_all_; }
        Result<arch::RegisterSnapshot*> registers(pid_t tid) override {
            return p_.registers_.snapshot(tid, false);
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
        void read_agent_ring() override { p_.debug_points_.read_ring(); }

      private:
        LinuxProcess& p_;
    };
    FastSiteAccess fast_site_access_{*this};
    // (After memory_ and threads_, which it works on.)
    LinuxFastSites fast_sites_{arch_, *memory_, threads_, remote_calls_, fast_site_access_};
    LinuxDebugPoints debug_points_{arch_, *memory_, fast_sites_, trap_sites_,
                                   threads_}; // (after fast_sites_)
};

} // namespace tpagent::process
