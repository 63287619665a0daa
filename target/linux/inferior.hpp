// One traced Linux process and its threads, driven over ptrace in all-stop mode: when one thread
// has something to report, every other thread is stopped before the event is handed out.
#pragma once
#include "arch/hw_points.hpp"
#include "target/linux/software_breakpoints.hpp"
#include "target/linux/stop_event.hpp"
#include "arch/arch.hpp"
#include "base/result.hpp"
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <set>
#include <csignal>
#include <span>
#include <string>
#include <sys/types.h>
#include <vector>

namespace tpagent::agent {

struct LaunchSpec {
    std::vector<std::string> program; // PROG ARGS...
    std::vector<std::string> wrapper; // run through this, which must exec PROG
    bool disable_randomization = true;
    bool stdio_is_protocol = false; // keep the program off our stdin/stdout
    std::string preload;            // a library to add to LD_PRELOAD
    // gdb's `set/unset environment` (QEnvironment*): NAME -> value, nullopt = unset.
    std::map<std::string, std::optional<std::string>> environment;
};

// What one thread is asked to do by a resume request.
struct ThreadResume {
    pid_t tid = 0;
    bool step = false;
    int signal = 0; // host signal to deliver
};

class Inferior {
  public:
    static Result<std::unique_ptr<Inferior>> launch(const LaunchSpec& spec);
    static Result<std::unique_ptr<Inferior>> attach(pid_t pid);
    ~Inferior();
    Inferior(const Inferior&) = delete;
    Inferior& operator=(const Inferior&) = delete;

    pid_t pid() const { return pid_; }
    bool was_attached() const { return attached_; }
    bool alive() const { return alive_; }
    bool running() const { return running_; }
    const std::string& executable() const { return executable_; }

    std::vector<pid_t> thread_ids() const;
    bool has_thread(pid_t tid) const { return threads_.count(tid) != 0; }
    std::string thread_name(pid_t tid) const;

    // Registers of a stopped thread, in gdb's `g` layout.
    // full=false reads only the general registers (the rest are marked unavailable): cheaper.
    Result<std::vector<std::uint8_t>> read_registers(pid_t tid, std::vector<bool>& available,
                                                     bool full = true);
    Status write_registers(pid_t tid, std::span<const std::uint8_t> g);
    Status write_register(pid_t tid, int regnum, std::span<const std::uint8_t> value);
    Result<std::uint64_t> read_pc(pid_t tid);

    // Memory as the program's own: everything tpagent patched in (breakpoint instructions,
    // fast-tracepoint jumps) is hidden from reads and kept by writes, which change what the
    // patches stand for (a write into a fast tracepoint's instructions rebuilds its pad).
    // Reads return how many bytes were readable from the start (0 bytes readable is an error).
    Result<std::size_t> read_memory(std::uint64_t addr, std::span<std::uint8_t> out);
    Status write_memory(std::uint64_t addr, std::span<const std::uint8_t> data);

    // gdb's own breakpoints (Z0), sharing the instruction sites with tracepoints. One at a fast
    // tracepoint's address stops threads before its jump; one inside the instructions the
    // jump replaces is refused (no thread runs those bytes).
    Status insert_user_breakpoint(std::uint64_t addr);
    Status remove_user_breakpoint(std::uint64_t addr);
    bool user_breakpoint_at(std::uint64_t addr) const { return user_breakpoints_.count(addr) != 0; }
    const SoftwareBreakpoints& breakpoints() const { return *breakpoints_; }

    // Displaced-execution sites (trap tracepoints): a breakpoint whose original instruction is
    // run from a pad mapped near the code, so a thread passes the site with a single stop.
    struct SiteHit {
        bool consumed = false;   // handled here: resume the thread unless gdb has a breakpoint too
        std::uint64_t steps = 0; // then single-step this many times (while-stepping)
    };
    using SiteHitHandler = std::function<SiteHit(pid_t tid, std::uint64_t site)>;
    using SiteStepHandler = std::function<void(pid_t tid, std::uint64_t site)>;
    void set_site_handlers(SiteHitHandler hit, SiteStepHandler step) {
        on_site_hit_ = std::move(hit);
        on_site_step_ = std::move(step);
    }
    // All threads must be stopped (a pad may have to be mapped with an injected mmap).
    Status add_site(std::uint64_t addr);
    void remove_site(std::uint64_t addr);
    void remove_all_sites();
    bool has_site(std::uint64_t addr) const { return sites_.count(addr) != 0; }

    // Fast tracepoints: the instruction at addr becomes a jump to a pad that calls
    // collector(argument, block, state) in the program (see arch::JumpPadRequest). All threads
    // must be stopped; a thread stopped inside the displaced bytes is moved into the pad, and
    // out again on removal. Pads are never unmapped: a thread may still be running one.
    Status add_fast_site(std::uint64_t addr, std::uint64_t collector, std::uint64_t argument,
                         bool save_vector_state);
    void remove_fast_site(std::uint64_t addr);
    // The same with the displaced instructions relocated by someone else (gdb, qRelocInsn), one
    // at a time: begin writes the pad's own code and says where the first instruction goes;
    // each relocated length gives the next move, and after the last the jump back and the patch
    // go in (nullopt). A failure (or abandon) leaves nothing installed at that address.
    struct InstructionMove {
        std::uint64_t from = 0; // the original instruction
        std::uint64_t to = 0;   // where its relocated form goes in the pad
    };
    Result<InstructionMove> begin_fast_site(std::uint64_t addr, std::uint64_t collector,
                                            std::uint64_t argument, bool save_vector_state);
    Result<std::optional<InstructionMove>> fast_site_moved(std::uint64_t length);
    void abandon_fast_site() { moving_.reset(); }
    // Executable code for the program (compiled agent expressions), in pad memory near `near`.
    Result<std::uint64_t> place_code(std::uint64_t near, std::span<const std::uint8_t> code);
    void remove_all_fast_sites();
    bool has_fast_site(std::uint64_t addr) const { return fast_sites_.count(addr) != 0; }

    // Installs hardware watchpoints/breakpoints (Z1..Z4).
    Status insert_hw_point(int type, std::uint64_t addr, std::uint64_t len);
    Status remove_hw_point(int type, std::uint64_t addr, std::uint64_t len);

    // Starts the threads named in `actions`; the rest stay stopped. If a thread already has an
    // event waiting, nothing is resumed and that event is returned at once.
    Result<std::optional<StopEvent>> resume(const std::vector<ThreadResume>& actions);
    // Called when SIGCHLD arrived: reaps wait statuses; returns an event once all threads stopped.
    std::optional<StopEvent> poll();
    // Resumes every thread (gdb gone, a trace keeps running).
    Status resume_all();
    // Stops every thread now, waiting for them (a gdb connects to a running program). The event
    // is a stop with signal 0 on the main thread, or the process's exit if it ended meanwhile.
    std::optional<StopEvent> stop_all_now();
    // Ctrl-C from gdb: makes the process stop with SIGINT.
    void interrupt();
    // Signals (host numbers) delivered to the program without stopping (QPassSignals).
    void set_pass_signals(std::set<int> signals) { pass_signals_ = std::move(signals); }

    // Where the in-process agent's code is in the program. A SIGSEGV/SIGBUS with the pc in
    // [copy_begin, copy_end) is its copy reading memory unmapped since it was listed readable,
    // not the program's: the pc moves to copy_fault (which returns a short count) and the
    // signal is never delivered. A thread stopped in [code_begin, code_end) is collecting: it
    // is stepped out (with threads in pads) before gdb sees a stop.
    struct InprocAgentCode {
        std::uint64_t copy_begin = 0, copy_end = 0, copy_fault = 0;
        std::uint64_t code_begin = 0, code_end = 0;
    };
    void set_inproc_agent_code(std::optional<InprocAgentCode> c) { agent_code_ = c; }
    // Called when the process execs: the old image, and everything placed in it, is gone.
    void set_exec_handler(std::function<void()> h) { on_exec_ = std::move(h); }

    Status kill();
    Status detach();

  private:
    struct Thread {
        bool stopped = true;
        bool stop_requested = false;      // a SIGSTOP we sent has not shown up yet
        bool awaiting_first_stop = false; // new clone, its initial SIGSTOP not seen yet
        bool wants_run = false;           // gdb asked it to run (re-resume after our own SIGSTOP)
        bool stepping = false;
        int resume_signal = 0;
        std::optional<StopEvent> pending; // reportable event held back while another is reported
        std::optional<arch::RegisterSnapshot> regs;
        bool regs_full = false; // regs holds the vector/FP state too, not just the gpr
        std::optional<std::uint64_t> step_from_site; // single-stepping the pad of this site
        std::uint64_t trace_steps_left = 0;          // while-stepping steps still to collect
        std::uint64_t trace_site = 0;
        bool user_step = false; // gdb asked this thread to single-step
        // The trap site at the pc whose hit was collected already (the thread stopped there
        // after its breakpoint); any other stop at a site has not run it yet.
        std::optional<std::uint64_t> collected_at;
        // gdb's single step over a fast tracepoint's jump: stepping on through its pad (and the
        // collector) until the displaced instruction has run, then back to program addresses.
        std::optional<std::uint64_t> fast_step;
        bool fast_step_in_copy = false; // reached the relocated instruction
        std::uint64_t fast_step_count = 0;
    };
    struct Site {
        std::uint64_t pad = 0;
        arch::Relocated code;
    };
    struct FastSite {
        std::uint64_t pad = 0;
        std::size_t relocated_offset = 0;
        arch::Relocated code;
        std::vector<std::uint8_t> original; // the bytes the patch replaced
        std::vector<std::uint8_t> patch;    // the jump written over them
        // What built it, to rebuild it when gdb writes into its instructions.
        std::uint64_t collector = 0, argument = 0;
        bool save_vector_state = false;
    };
    // A pad built and placed, nothing written yet (add_fast_site, begin_fast_site).
    struct FastPad {
        std::uint64_t pad = 0;
        std::size_t room = 0; // bytes allocated at pad
        arch::EmittedJumpPad emitted;
        std::vector<std::uint8_t> code; // the program's bytes at the tracepoint
        std::uint64_t collector = 0, argument = 0;
        bool save_vector_state = false;
    };
    Result<FastPad> build_fast_pad(std::uint64_t addr, std::uint64_t collector,
                                   std::uint64_t argument, bool save_vector_state);
    // Moves threads out of the displaced bytes, writes built's patch and records the site,
    // whose relocated instructions are laid out as `code` says.
    Status commit_fast_site(std::uint64_t addr, const FastPad& built, arch::Relocated code);
    // A site whose instructions are being relocated by gdb (begin_fast_site).
    struct MovingSite {
        std::uint64_t addr = 0;
        FastPad pad;
        // gdb's layout so far (pad offsets from the pad's relocated_offset)
        std::vector<arch::Boundary> moved;
        std::uint64_t next_to = 0;
    };
    // Moves stopped threads whose pc is in [from, from+len) by `move` (nullopt: leave it).
    // Fails, having moved nothing, if a thread's registers cannot be read or written.
    Status move_threads(std::uint64_t from, std::size_t len,
                        const std::function<std::optional<std::uint64_t>(std::uint64_t)>& move);
    // Threads in a fast site's relocated copy go back to the same original instructions
    // (the jump is gone, or was never written); a failure is logged.
    void move_out_of_copy(std::uint64_t addr, const FastSite& site);
    // Writes the program's view of [addr, addr+len) through the breakpoint layer (breakpoint
    // instructions stay, their saved bytes change).
    Status write_under_breakpoints(std::uint64_t addr, std::span<const std::uint8_t> data);
    // The fast site whose displaced instructions include addr, if any.
    const std::pair<const std::uint64_t, FastSite>* fast_site_covering(std::uint64_t addr) const;
    bool finish_fast_step(pid_t tid, Thread& t);
    bool recover_collector_fault(pid_t tid);
    // Threads stopped inside pads or the collector run (one instruction at a time) until
    // they are back at the program's own instructions, so gdb never sees tpagent's code.
    void leave_pads();
    void leave_pads(pid_t tid, Thread& t);
    bool in_tpagent_code(std::uint64_t pc) const;
    // Collects a trap site's hit for a thread about to leave its address without having run
    // the breakpoint (it stepped onto it, or was stopped there).
    void collect_unrun_site(pid_t tid, Thread& t, std::uint64_t pc, bool& step);
    struct PadPage {
        std::uint64_t base = 0;
        std::size_t used = 0;
    };

    explicit Inferior(pid_t pid, bool attached);
    Status finish_setup();
    // The cached registers of a stopped thread; `full` also fetches the vector/FP state.
    Result<arch::RegisterSnapshot*> snapshot(pid_t tid, bool full = true);
    Status resume_thread(pid_t tid, Thread& t, bool step, int signal);
    std::optional<StopEvent> handle_status(pid_t tid, int status);
    std::optional<StopEvent> handle_stop(pid_t tid, Thread& t, int status);
    std::optional<StopEvent> handle_trap(pid_t tid, Thread& t);
    std::optional<StopEvent> classify_trap(pid_t tid, const siginfo_t& info);
    bool finish_pad_step(pid_t tid, Thread& t);
    void continue_after_stop(pid_t tid, Thread& t, bool step);
    Result<std::uint64_t> allocate_pad(std::uint64_t near, std::size_t size);
    Result<std::int64_t> inject_syscall(pid_t tid, long number,
                                        std::span<const std::uint64_t> args);
    std::optional<StopEvent> report(pid_t tid, Thread& t, StopEvent ev);
    // report() without finishing: the event is chosen (or held back) and the others stopped.
    void choose(pid_t tid, Thread& t, StopEvent ev);
    // Forgets everything placed in the process image (exec, death): nothing is written back.
    void forget_image();
    std::optional<StopEvent> finish_stop_all();
    void add_thread(pid_t tid, bool awaiting_first_stop);
    bool pending_still_valid(pid_t tid, Thread& t);
    Status raw_read(std::uint64_t addr, std::span<std::uint8_t> out, std::size_t& got);
    Status raw_write(std::uint64_t addr, std::span<const std::uint8_t> data);
    void reopen_memory();
    void mark_dead();

    pid_t pid_;
    bool attached_;
    bool alive_ = true;
    bool running_ = false;      // resumed and no stop reported since
    bool stopping_all_ = false; // an event is chosen; waiting for the other threads to stop
    std::optional<StopEvent> chosen_;
    int mem_fd_ = -1;
    std::string executable_;
    std::map<pid_t, Thread> threads_;
    std::set<int> pass_signals_;
    std::unique_ptr<SoftwareBreakpoints> breakpoints_;
    HwPoints hw_points_;
    std::set<std::uint64_t> user_breakpoints_;
    std::map<std::uint64_t, Site> sites_;
    std::map<std::uint64_t, FastSite> fast_sites_;
    std::optional<MovingSite> moving_;
    std::set<std::uint64_t> recently_removed_sites_; // traps already taken may still arrive
    std::vector<PadPage> pad_pages_;
    std::optional<InprocAgentCode> agent_code_;
    std::function<void()> on_exec_;
    SiteHitHandler on_site_hit_;
    SiteStepHandler on_site_step_;
    const arch::Architecture& arch_;
};

} // namespace tpagent::agent
