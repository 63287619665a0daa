// The fast tracepoints of one traced Linux process: jumps from the program's code to pads that
// call the in-process collector, the memory those pads and placed code live in (shared with
// the trap sites' pads), and tpagent's own steps of threads out of that code.
#pragma once
#include "arch/arch.hpp"
#include "base/proc_maps.hpp"
#include "base/result.hpp"
#include "process/fast_sites.hpp"
#include "process/linux/address_space.hpp"
#include "process/linux/code_entries.hpp"
#include "process/linux/go_program.hpp"
#include "process/linux/linux_thread.hpp"
#include "process/linux/pad_pages.hpp"
#include "process/linux/remote_calls.hpp"
#include <algorithm>
#include <cstdint>
#include <functional>
#include <map>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <sys/types.h>
#include <vector>

namespace tpagent::process {

// What the fast sites need of the process they are in, beyond its threads, memory and remote
// calls.
class FastSiteProcess {
  public:
    virtual pid_t pid() const = 0;
    virtual bool alive() const = 0;
    // Every thread stopped and no event being chosen: no thread can move under a page scan.
    virtual bool at_rest() const = 0;
    // The cached registers of a stopped thread (general registers only).
    virtual Result<arch::RegisterSnapshot*> registers(pid_t tid) = 0;
    // The program's own bytes: breakpoints and jumps hidden.
    virtual Result<std::size_t> read_program(std::uint64_t addr, std::span<std::uint8_t> out) = 0;
    // Refused where a jump at addr would change what the program does.
    virtual Status check_interruptible(std::uint64_t addr) = 0;
    virtual void code_patched() = 0; // what tpagent has written into the code changed
    // Trap sites: one at addr; whether any has a pad; where a pc in one of their pads is in
    // the program's code (a thread there is marked as having collected that site's hit).
    virtual bool trap_site_at(std::uint64_t addr) const = 0;
    virtual bool trap_pads_in_use() const = 0;
    virtual std::optional<std::uint64_t> out_of_trap_pad(LinuxThread& t, std::uint64_t pc) = 0;
    // The agent's ring of dprintf lines emptied (DebugPoints::set_ring_reader).
    virtual void read_agent_ring() = 0;

  protected:
    ~FastSiteProcess() = default;
};

class LinuxFastSites final : public FastSites {
  public:
    // `remote_calls` maps pad pages (an mmap run by a stopped thread of the program).
    LinuxFastSites(const arch::Architecture& arch, AddressSpace& memory, LinuxThreads& threads,
                   RemoteCalls& remote_calls, FastSiteProcess& process)
        : arch_(arch), memory_(memory), threads_(threads), remote_calls_(remote_calls),
          process_(process),
          entries_(arch, [&process](std::uint64_t addr, std::span<std::uint8_t> out) {
              return process.read_program(addr, out);
          }) {}
    LinuxFastSites(const LinuxFastSites&) = delete;
    LinuxFastSites& operator=(const LinuxFastSites&) = delete;

    Status add(std::uint64_t addr, std::uint64_t collector, std::uint64_t argument,
               arch::FastPadOptions options) override;
    void remove(std::uint64_t addr) override;
    Result<std::size_t> jump_span(std::uint64_t addr) override;
    Result<InstructionMove> begin(std::uint64_t addr, std::uint64_t collector,
                                  std::uint64_t argument, arch::FastPadOptions options) override;
    Result<std::optional<InstructionMove>> moved(std::uint64_t length) override;
    void abandon() override { moving_.reset(); }
    Result<std::uint64_t> place_code(std::uint64_t near,
                                     std::span<const std::uint8_t> code) override;
    void remove_all() override;
    bool has(std::uint64_t addr) const override { return sites_.count(addr) != 0; }
    void set_agent_code(std::optional<InprocAgentCode> code) override { agent_code_ = code; }

    bool empty() const { return sites_.empty(); }
    // Whether any jump is a tracepoint's (not gdb's breakpoint's).
    bool has_tracepoints() const {
        return std::any_of(sites_.begin(), sites_.end(),
                           [](const auto& s) { return !s.second.call.carries_breakpoint; });
    }

    // gdb's breakpoints evaluated in the program: a jump at `addr` to a pad that calls
    // `entry(record, …)` (the in-process agent's breakpoint entry) carries gdb's breakpoint
    // there instead of a breakpoint instruction (AddressSpace::carry_user_breakpoint).
    // remove_all leaves such a jump; remove_carriers takes them all (detach).
    Status add_carrier(std::uint64_t addr, std::uint64_t entry, std::uint64_t record,
                       arch::FastPadOptions options);
    bool carrier_at(std::uint64_t addr) const {
        auto it = sites_.find(addr);
        return it != sites_.end() && it->second.call.carries_breakpoint;
    }
    void remove_carriers() { remove_sites(true); }
    bool keeps_carrier(std::uint64_t addr, std::uint64_t argument) const override {
        auto it = carrier_pads_.find(addr);
        return it != carrier_pads_.end() && it->second.built.call.argument == argument;
    }
    // The carriers at or around [addr, addr+len) give way (to a tracepoint, a breakpoint inside
    // their jump, new code): each jump goes and its breakpoint is an instruction again.
    void uncarry_within(std::uint64_t addr, std::size_t len);
    // A thread stopped at the breakpoint entry's trap (a condition held): whether pc is there.
    bool has_breakpoint_trap() const { return agent_code_ && agent_code_->breakpoint_trap; }
    bool at_breakpoint_trap(std::uint64_t pc) const {
        return agent_code_ && agent_code_->breakpoint_trap &&
               pc - arch_.pc_after_breakpoint(0) == agent_code_->breakpoint_trap;
    }
    // Steps such a thread on, out of the entry and its pad, to the relocated copy of the
    // carrier's instruction, and puts its pc at the carrier: that address, or nullopt (the
    // thread is then where the steps left it). A signal it took on the way is its pending
    // event.
    std::optional<std::uint64_t> leave_breakpoint_entry(pid_t tid, LinuxThread& t);
    // The pc of a thread at that trap goes past it (a step through the pad goes on).
    void skip_breakpoint_trap(pid_t tid);
    // Each jump written: its address, the bytes it replaced, the jump's own bytes.
    void for_each_patch(const std::function<void(std::uint64_t, std::span<const std::uint8_t>,
                                                 std::span<const std::uint8_t>)>& fn) const;
    // Puts the program's bytes back over the jumps in `out` (read from addr).
    void hide_jumps(std::uint64_t addr, std::span<std::uint8_t> out) const;
    // Whether `at` is one of the bytes of a jump.
    bool in_jump(std::uint64_t at) const;
    std::optional<Covering> covering(std::uint64_t addr) const override;
    bool pads_on_agent_stacks() override;
    std::optional<AgentStackUse> agent_stack_use() override;
    // Writes the program's code under the jumps and breakpoints (see LinuxProcess::write_memory):
    // the same bytes keep a jump, new ones take it out, go in, and a rebuilt jump goes back.
    Status write_code(std::uint64_t addr, std::span<const std::uint8_t> data);
    // Forgets everything placed in the process image (exec, death): nothing is written back.
    void forget();

    // Room for a pad (or placed code) near `near`: in a page of this run, in one reused from
    // a run whose code is dead, else in a page mapped by an injected mmap.
    Result<std::uint64_t> allocate_pad(std::uint64_t near, std::size_t size);

    // Run control (linux_fast_site_steps.cpp).
    // Whether pc is in the in-process agent's code (the collector).
    bool in_agent_code(std::uint64_t pc) const {
        return agent_code_ && pc >= agent_code_->code_begin && pc < agent_code_->code_end;
    }
    // A thread to resume whose pc is inside a jump's displaced instructions (a step over the
    // jump left it at the next one) goes to that instruction's copy in the pad; stepping, it
    // is brought back after one instruction (finish_step).
    Status resume_inside_jump(pid_t tid, LinuxThread& t, bool step);
    // A SIGSEGV/SIGBUS of the collector's copy: the thread goes on from the copy's fault path.
    bool recover_collector_fault(pid_t tid);
    // One instruction of a single step over a fast tracepoint's jump has run. True once the
    // displaced instruction has (the pc is put back into the program's code); false to step on.
    bool finish_step(pid_t tid, LinuxThread& t);
    // Threads stopped inside pads or the collector run (to the collector's return, then one
    // instruction at a time) until they are back at the program's own instructions, so gdb
    // never sees tpagent's code. `chosen`: the thread whose event is chosen (0: none); it and
    // a thread with an event pending only move back where they stand on a boundary.
    void leave_pads(pid_t chosen);
    void leave_pads(pid_t tid, LinuxThread& t, bool has_event);

  private:
    // What a fast site's pad calls, kept to rebuild the site when gdb writes into its code.
    struct FastCall {
        std::uint64_t collector = 0, argument = 0;
        arch::FastPadOptions options;
        bool carries_breakpoint = false; // gdb's breakpoint evaluated in the program (add_carrier)
    };
    struct FastSite {
        std::uint64_t pad = 0;
        std::size_t relocated_offset = 0;
        arch::Relocated code;
        std::vector<std::uint8_t> original; // the bytes the patch replaced
        std::vector<std::uint8_t> patch;    // the jump written over them
        FastCall call;
        std::uint64_t slot = 0; // the jump's slot, when the patch is a short jump to it
        std::optional<arch::PadCopyRange> copy; // the pad's in-line copy (recover_collector_fault)
    };
    // Where the jump to a pad goes when it does not fit at the tracepoint: bytes nearby that
    // never run (Architecture::never_runs), reached by a short jump there.
    struct Slot {
        std::uint64_t site = 0;
        std::vector<std::uint8_t> original, patch;
    };
    // A pad built and placed, nothing written yet (add, begin).
    struct FastPad {
        std::uint64_t pad = 0;
        std::size_t room = 0; // bytes allocated at pad
        arch::EmittedJumpPad emitted;
        std::vector<std::uint8_t> code; // the program's bytes at the tracepoint
        FastCall call;
        std::uint64_t slot = 0; // with a short jump: its slot and the jump written there
        std::vector<std::uint8_t> slot_patch;
    };
    // A site whose instructions are being relocated by gdb (begin).
    struct MovingSite {
        std::uint64_t addr = 0;
        FastPad pad;
        // gdb's layout so far (pad offsets from the pad's relocated_offset)
        std::vector<arch::Boundary> moved;
        std::uint64_t next_to = 0;
    };
    Result<FastPad> build_fast_pad(std::uint64_t addr, const FastCall& call);
    // A new pad for `call` and the jump to it at addr (a carrier's pad kept for reuse).
    Status place_site(std::uint64_t addr, const FastCall& call);
    // Removes every carrier's jump (carriers) or every tracepoint's (not).
    void remove_sites(bool carriers);
    // Where the jump to the pad of a tracepoint at addr whose window does not take it (why:
    // `refused`) can go: a slot a short jump reaches (the window the short jump displaces,
    // and the slot), or nullopt. A slot found is promised to addr until the program runs.
    struct ShortJump {
        arch::Relocated window;
        std::uint64_t slot = 0;
    };
    std::optional<ShortJump> short_jump(std::uint64_t addr, std::span<const std::uint8_t> code);
    std::optional<std::uint64_t> free_slot(std::uint64_t addr, std::size_t covered);
    // The program's bytes at addr: whole instructions covering the jump.
    Result<std::vector<std::uint8_t>> code_at(std::uint64_t addr);
    // Why the instructions `relocated` displaces from `code` at addr cannot all move (see
    // jump_span), or nullopt.
    std::optional<std::string> displacement_refused(std::uint64_t addr,
                                                    std::span<const std::uint8_t> code,
                                                    const arch::Relocated& relocated);
    // Moves threads out of the displaced bytes, writes built's patch and records the site,
    // whose relocated instructions are laid out as `code` says.
    Status commit_fast_site(std::uint64_t addr, const FastPad& built, arch::Relocated code);
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
    // Passes the words of a live stack ([sp, end of its mapping), or of its first `most`
    // bytes) to `see`, in chunks; false when it cannot be read whole or (most 0) is larger
    // than the scan's bound.
    bool read_live_stack(const std::vector<MappedRange>& maps, std::uint64_t sp,
                         const std::function<void(const std::uint8_t*, std::size_t)>& see,
                         std::uint64_t most = 0);
    // The program's memory as the Go runtime's readers take it (tpagent's patches hidden).
    ReadMemory program_memory();
    // Passes [from, end) to `see` in chunks; the address of the chunk that cannot be read
    // whole, or nullopt.
    std::optional<std::uint64_t>
    scan_memory(std::uint64_t from, std::uint64_t end,
                const std::function<void(const std::uint8_t*, std::size_t)>& see);
    // A stopped thread's stack word inside (lo, hi): a return address or an interrupted pc.
    std::optional<std::string> stack_word_inside(std::uint64_t lo, std::uint64_t hi);
    // A word inside (lo, hi) on a goroutine's stack (go_program.hpp), from the words into the
    // code gathered once while the program stays stopped.
    std::optional<std::string> goroutine_word_inside(std::uint64_t lo, std::uint64_t hi);
    // Whether anything installed still uses the current run's pads or placed code.
    bool pads_in_use() const;
    // Frees the retired runs' pages that no thread can still be running in or return into;
    // false if none could be freed.
    bool reclaim_pads();
    bool run_to(pid_t tid, LinuxThread& t, std::uint64_t addr);
    int wait_own_resume(pid_t tid, LinuxThread& t);
    bool in_tpagent_code(std::uint64_t pc) const;

    const arch::Architecture& arch_;
    AddressSpace& memory_;
    LinuxThreads& threads_;
    RemoteCalls& remote_calls_;
    FastSiteProcess& process_;
    CodeEntries entries_; // where control arrives from elsewhere, per file
    std::map<std::uint64_t, FastSite> sites_;
    std::optional<MovingSite> moving_;
    PadPages pad_pages_;
    // Code placed (place_code) since the last remove_all: the in-process agent's records may
    // call it until then.
    bool placed_code_live_ = false;
    std::optional<InprocAgentCode> agent_code_;

    // Agent stacks (linux_agent_stacks.cpp): in a Go program, a pool mapped at the first pad
    // and kept while the program image lives (threads keep the stacks they took).
    struct AgentStackPool {
        std::uint64_t address = 0, bytes = 0;
    };
    static constexpr std::uint32_t kAgentStackBytes = 64u << 10;
    static constexpr std::uint64_t kAgentStackCount = 256;
    // Why a pad cannot go at `addr` in this program (a Go program with cgo, or whose threads
    // are not laid out as tpagent knows, or the runtime's code before a thread has its
    // goroutine), or nullopt.
    std::optional<std::string> agent_stacks_refused(std::uint64_t addr);
    // The stacks for the pad at `addr` (mapping the pool the first time); pool 0 when not
    // needed.
    Result<arch::AgentStacks> agent_stacks(std::uint64_t addr);
    std::optional<GoProgram> go_program_;
    // arm64: where the pads find their thread's words (found once the runtime has started).
    std::optional<GoThreadWords> go_thread_words_;
    std::optional<AgentStackPool> agent_stack_pool_;
    // Words on goroutine stacks pointing into the Go program's code, sorted.
    std::optional<std::vector<std::uint64_t>> goroutine_code_words_;
    std::map<std::uint64_t, Slot> slots_; // by the slot's address
    // The pads of gdb's breakpoints carried by jumps, in place or not, by address: gdb takes a
    // breakpoint out and puts it back around every step over it (and, not always-inserted, at
    // every stop and resume); it goes back to the same pad while its pages live.
    struct CarrierPad {
        FastPad built;
        arch::Relocated code;
    };
    std::map<std::uint64_t, CarrierPad> carrier_pads_;
    // What jump_span promised while the program stays stopped, so that what it said holds
    // when the jumps go in: tracepoint -> its slot, tracepoint -> the bytes its jump covers.
    std::map<std::uint64_t, std::uint64_t> promised_;
    std::map<std::uint64_t, std::size_t> promised_windows_;

  public:
    // The program ran: what was gathered from its stacks is stale, and the slots jump_span
    // promised are free again.
    void program_resumed() {
        goroutine_code_words_.reset();
        promised_.clear();
        promised_windows_.clear();
    }
};

} // namespace tpagent::process
