// A Target with no process behind it: one stopped thread, a register block, sparse memory.
// Handlers run against it byte for byte; what it was asked is recorded for the tests to check.
#pragma once
#include "arch/arch.hpp"
#include "process/target.hpp"
#include <map>
#include <new>
#include <set>
#include <string>
#include <vector>

namespace tpagent::server::testing {

// One stopped thread's register block.
class FakeRegisters final : public process::ThreadRegisters {
  public:
    static constexpr pid_t kPid = 4242;
    std::vector<std::uint8_t> block = std::vector<std::uint8_t>(arch::host_architecture().g_size());

    Result<std::vector<std::uint8_t>> read(pid_t tid, std::vector<bool>& available,
                                           bool = true) override {
        if (tid != kPid) return make_error(ErrorCode::NoProcess, "no such thread");
        available.assign(arch::host_architecture().registers().size(), true);
        return block;
    }
    Status write(pid_t, std::span<const std::uint8_t> g) override {
        block.assign(g.begin(), g.end());
        return ok_status();
    }
    Status write_one(pid_t, int regnum, std::span<const std::uint8_t> value) override {
        const auto& r = arch::host_architecture().registers()[static_cast<std::size_t>(regnum)];
        std::copy(value.begin(), value.end(), block.begin() + r.g_offset);
        return ok_status();
    }
    Result<std::uint64_t> read_pc(pid_t) override { return 0x1000; }
};

// gdb's breakpoints, recorded; no hardware points.
class FakeDebugPoints final : public process::DebugPoints {
  public:
    std::set<std::uint64_t> breakpoints;
    Status insert_breakpoint(std::uint64_t addr, process::BreakpointCode code) override {
        breakpoints.insert(addr);
        if (code.empty())
            codes.erase(addr);
        else
            codes[addr] = std::move(code);
        return ok_status();
    }
    std::map<std::uint64_t, process::BreakpointCode> codes;
    void set_command_output(CommandOutput) override {}
    void set_ring_reader(RingReader) override {}
    bool persistent_commands() const override {
        for (const auto& [addr, code] : codes)
            if (code.persist && !code.commands.empty()) return true;
        return false;
    }
    Status remove_breakpoint(std::uint64_t addr) override {
        if (!breakpoints.erase(addr)) return make_error(ErrorCode::NotFound, "no breakpoint there");
        codes.erase(addr);
        return ok_status();
    }
    bool breakpoint_at(std::uint64_t addr) const override { return breakpoints.count(addr); }
    Status carry_breakpoint(std::uint64_t, std::uint64_t, std::uint64_t,
                            arch::FastPadOptions) override {
        return make_error(ErrorCode::Unsupported, "no program to run conditions in");
    }
    bool carried(std::uint64_t) const override { return false; }
    Status insert_hw_point(int, std::uint64_t, std::uint64_t, process::BreakpointCode) override {
        return make_error(ErrorCode::Unsupported, "not in the fake");
    }
    Status remove_hw_point(int, std::uint64_t, std::uint64_t) override {
        return make_error(ErrorCode::Unsupported, "not in the fake");
    }
};

class FakeTarget final : public process::Target {
  public:
    static constexpr pid_t kPid = FakeRegisters::kPid;

    std::map<std::uint64_t, std::uint8_t> memory; // readable bytes
    std::vector<process::StaticMarker> markers;
    FakeRegisters thread_registers;
    FakeDebugPoints points;
    std::vector<std::vector<process::ThreadResume>> resumes;
    bool throw_on_memory_read = false; // as an allocation failing inside a handler would

    pid_t pid() const override { return kPid; }
    bool was_attached() const override { return false; }
    bool alive() const override { return alive_; }
    bool running() const override { return running_; }
    const std::string& executable() const override { return executable_; }
    std::vector<process::StaticMarker> static_markers() const override { return markers; }
    std::vector<pid_t> thread_ids() const override { return {kPid}; }
    bool has_thread(pid_t tid) const override { return tid == kPid; }
    std::string thread_name(pid_t) const override { return "fake"; }

    process::ThreadRegisters& registers() override { return thread_registers; }
    Result<std::uint64_t> thread_local_address(pid_t, std::uint64_t, std::uint64_t) override {
        return make_error(ErrorCode::Unsupported, "not in the fake");
    }

    Result<std::size_t> read_memory(std::uint64_t addr, std::span<std::uint8_t> out) override {
        if (throw_on_memory_read) throw std::bad_alloc();
        std::size_t n = 0;
        for (; n < out.size(); ++n) {
            auto it = memory.find(addr + n);
            if (it == memory.end()) break;
            out[n] = it->second;
        }
        if (n == 0) return make_error(ErrorCode::MemoryAccess, "cannot read memory");
        return n;
    }
    Status write_memory(std::uint64_t addr, std::span<const std::uint8_t> data) override {
        for (std::size_t i = 0; i < data.size(); ++i)
            memory[addr + i] = data[i];
        return ok_status();
    }

    process::DebugPoints& debug_points() override { return points; }

    // Tracepoint sites and hardware points: not this fake's business.
    process::TrapSites& trap_sites() override { return trap_sites_; }
    // Fast tracepoints: refused, none installed.
    struct NoFastSites final : process::FastSites {
        Status add(std::uint64_t, std::uint64_t, std::uint64_t, arch::FastPadOptions) override {
            return unsupported();
        }
        void remove(std::uint64_t) override {}
        Result<std::size_t> jump_span(std::uint64_t) override { return unsupported(); }
        Result<InstructionMove> begin(std::uint64_t, std::uint64_t, std::uint64_t,
                                      arch::FastPadOptions) override {
            return unsupported();
        }
        Result<std::optional<InstructionMove>> moved(std::uint64_t) override {
            return unsupported();
        }
        void abandon() override {}
        Result<std::uint64_t> place_code(std::uint64_t, std::span<const std::uint8_t>) override {
            return unsupported();
        }
        void remove_all() override {}
        bool keeps_carrier(std::uint64_t, std::uint64_t) const override { return false; }
        bool has(std::uint64_t) const override { return false; }
        std::optional<Covering> covering(std::uint64_t) const override { return std::nullopt; }
        bool pads_on_agent_stacks() override { return false; }
        std::optional<AgentStackUse> agent_stack_use() override { return std::nullopt; }
        void set_agent_code(std::optional<InprocAgentCode>) override {}
    };
    NoFastSites no_fast_sites;
    process::FastSites& fast_sites() override { return no_fast_sites; }

    // Run control: a resume is recorded and the program "stops" at once when polled.
    Result<std::optional<process::StopEvent>>
    resume(const std::vector<process::ThreadResume>& actions) override {
        resumes.push_back(actions);
        running_ = true;
        return std::optional<process::StopEvent>();
    }
    std::optional<process::StopEvent> poll() override { return std::nullopt; }
    // Non-stop: the mode and the pauses asked for are counted.
    Status set_non_stop(bool on) override {
        non_stop = on;
        return ok_status();
    }
    Status pause_all() override {
        ++pauses;
        return ok_status();
    }
    void unpause_all() override { ++unpauses; }
    bool non_stop = false;
    int pauses = 0, unpauses = 0;
    Status resume_all() override { return ok_status(); }
    std::optional<process::StopEvent> stop_all_now() override { return std::nullopt; }
    void interrupt() override {}
    void set_pass_signals(std::set<int>) override {}
    void set_exec_handler(std::function<void()>) override {}
    Status kill() override {
        alive_ = false;
        return ok_status();
    }
    Status detach() override { return kill(); }

  private:
    static Error unsupported() { return make_error(ErrorCode::Unsupported, "not in the fake"); }
    // Takes no site.
    class NoTrapSites final : public process::TrapSites {
      public:
        void set_handlers(SiteHitHandler, SiteStepHandler) override {}
        Status add(std::uint64_t) override { return unsupported(); }
        void remove(std::uint64_t) override {}
        void remove_all() override {}
        bool has(std::uint64_t) const override { return false; }
    };
    NoTrapSites trap_sites_;
    bool alive_ = true;
    bool running_ = false;
    std::string executable_ = "/fake/prog";
};

} // namespace tpagent::server::testing
