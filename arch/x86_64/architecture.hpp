// Architecture for x86-64 GNU/Linux: gdb's amd64-linux register set, sized to the CPU.
#pragma once
#include "arch/arch.hpp"
#include "arch/x86_64/code_references.hpp"
#include "arch/x86_64/control_flow.hpp"
#include "arch/x86_64/cpu_features.hpp"
#include "arch/x86_64/ptrace_regsets.hpp"
#include "arch/x86_64/registers.hpp"
#include <string>

namespace tpagent::arch::x86_64 {

class X86_64Architecture final : public Architecture {
  public:
    explicit X86_64Architecture(const CpuFeatures& cpu);

    std::span<const RegisterDesc> registers() const override { return layout_.registers(); }
    std::size_t g_size() const override { return layout_.g_size(); }
    std::span<const int> expedited_registers() const override;
    int pc_regnum() const override { return kRipRegnum; }

    std::optional<std::string> feature_xml(std::string_view annex) const override;

    Status read_snapshot(pid_t tid, RegisterSnapshot& out) const override;
    Status write_snapshot(pid_t tid, const RegisterSnapshot& in) const override;
    Status write_general_registers(pid_t tid, const RegisterSnapshot& in) const override;
    Status read_general_registers(pid_t tid, RegisterSnapshot& out) const override {
        return read_general_regset(tid, out);
    }

    void snapshot_to_g(const RegisterSnapshot& s, std::span<std::uint8_t> g,
                       std::vector<bool>& available) const override;
    void g_to_snapshot(std::span<const std::uint8_t> g, RegisterSnapshot& s) const override;

    std::uint64_t pc(const RegisterSnapshot& s) const override;
    void set_pc(RegisterSnapshot& s, std::uint64_t pc) const override;
    std::uint64_t sp(const RegisterSnapshot& s) const override;

    std::span<const std::uint8_t> breakpoint_instruction() const override;
    std::uint64_t pc_after_breakpoint(std::uint64_t addr) const override { return addr + 1; }

    Result<Relocated> relocate(std::span<const std::uint8_t> code, std::uint64_t from,
                               std::uint64_t to, std::size_t min_bytes) const override;
    std::uint64_t pad_reach() const override { return 0x7fff0000; }
    std::size_t max_instruction_bytes() const override { return 15; }
    Result<FlowInstruction> decode_flow(std::span<const std::uint8_t> code,
                                        std::uint64_t addr) const override {
        return x86_64::decode_flow(code, addr);
    }
    std::uint64_t user_address_top() const override { return 0x7ffffffff000; } // 47 bits
    std::size_t min_fast_tracepoint_length() const override;
    std::size_t fast_tracepoint_instruction_minimum() const override { return 1; }
    bool pads_on_agent_stacks() const override { return true; }
    void sweep_code_references(std::span<const std::uint8_t> code, std::uint64_t addr,
                               CodeReferences& out) const override {
        x86_64::sweep_code_references(code, addr, out);
    }
    std::optional<std::string> displacement_hazard(std::span<const std::uint8_t> code,
                                                   std::uint64_t addr,
                                                   const Relocated& relocated) const override {
        return x86_64::displacement_hazard(code, addr, relocated);
    }
    std::optional<std::string> displaced_call(std::span<const std::uint8_t> code,
                                              std::uint64_t addr,
                                              const Relocated& relocated) const override {
        return x86_64::displaced_call(code, addr, relocated);
    }
    std::size_t fast_block_bytes() const override;
    FastBlockTail fast_block_tail() const override;
    FastBlockCompletion fast_block_completion() const override;
    FastSavedState fast_saved_state() const override;
    void fast_saved_state_to_g(std::span<const std::uint8_t> state, std::span<std::uint8_t> g,
                               std::vector<bool>& placed) const override;
    Result<EmittedJumpPad> emit_jump_pad(const JumpPadRequest& request) const override;
    bool collects_in_line() const override;
    Result<std::vector<std::uint8_t>> encode_pad_jump(std::uint64_t from,
                                                      std::uint64_t to) const override;
    std::size_t short_jump_length() const override { return 2; }
    std::int64_t short_jump_reach() const override { return 127; }
    Result<std::vector<std::uint8_t>> encode_short_jump(std::uint64_t from,
                                                        std::uint64_t to) const override;
    bool never_runs(std::span<const std::uint8_t> bytes) const override;
    Result<std::vector<std::uint64_t>> pc_relative_targets(std::span<const std::uint8_t> code,
                                                           std::uint64_t address) const override;
    SdtArgument parse_sdt_operand(std::string_view operand,
                                  const SdtSymbolResolver& symbol) const override;
    std::span<const std::uint8_t> syscall_instruction() const override;
    void set_syscall(RegisterSnapshot& s, long number, std::span<const std::uint64_t> args,
                     std::uint64_t pc) const override;
    std::int64_t syscall_result(const RegisterSnapshot& s) const override;
    std::uint64_t first_argument(const RegisterSnapshot& s) const override;
    long syscall_number(const RegisterSnapshot& s) const override;
    std::vector<std::uint8_t> set_call(RegisterSnapshot& s, std::uint64_t function,
                                       std::span<const std::uint64_t> args, std::uint64_t stack,
                                       std::uint64_t return_address) const override;
    std::uint64_t call_result(const RegisterSnapshot& s) const override;

    const RegisterLayout& layout() const { return layout_; }

  private:
    RegisterLayout layout_;
    std::string target_xml_;
    std::size_t xsave_capacity_; // buffer size for PTRACE_GETREGSET(NT_X86_XSTATE)
};

} // namespace tpagent::arch::x86_64
