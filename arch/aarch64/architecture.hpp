// Architecture for AArch64 GNU/Linux: gdb's aarch64 core and fpu registers, `brk #0`, trap
// tracepoint pads with relocated instructions, fast tracepoint jump pads (jump_pad.hpp).
#pragma once
#include "arch/arch.hpp"
#include "arch/aarch64/control_flow.hpp"
#include <string>

namespace tpagent::arch::aarch64 {

class Aarch64Architecture final : public Architecture {
  public:
    Aarch64Architecture();

    std::span<const RegisterDesc> registers() const override;
    std::size_t g_size() const override;
    std::span<const int> expedited_registers() const override;
    int pc_regnum() const override;

    std::optional<std::string> feature_xml(std::string_view annex) const override;

    Status read_snapshot(pid_t tid, RegisterSnapshot& out) const override;
    Status read_general_registers(pid_t tid, RegisterSnapshot& out) const override;
    Status write_snapshot(pid_t tid, const RegisterSnapshot& in) const override;
    Status write_general_registers(pid_t tid, const RegisterSnapshot& in) const override;
    void snapshot_to_g(const RegisterSnapshot& s, std::span<std::uint8_t> g,
                       std::vector<bool>& available) const override;
    void g_to_snapshot(std::span<const std::uint8_t> g, RegisterSnapshot& s) const override;

    std::uint64_t pc(const RegisterSnapshot& s) const override;
    void set_pc(RegisterSnapshot& s, std::uint64_t pc) const override;
    std::uint64_t sp(const RegisterSnapshot& s) const override;

    std::span<const std::uint8_t> breakpoint_instruction() const override;
    // `brk` traps with the pc on the instruction itself.
    std::uint64_t pc_after_breakpoint(std::uint64_t addr) const override { return addr; }

    std::size_t max_instruction_bytes() const override { return 4; }
    Result<FlowInstruction> decode_flow(std::span<const std::uint8_t> code,
                                        std::uint64_t addr) const override {
        return aarch64::decode_flow(code, addr);
    }
    std::uint64_t user_address_top() const override { return 0xfffffffff000; } // 48-bit VA
    Result<Relocated> relocate(std::span<const std::uint8_t> code, std::uint64_t from,
                               std::uint64_t to, std::size_t min_bytes) const override;
    std::uint64_t pad_reach() const override;

    std::size_t min_fast_tracepoint_length() const override { return 4; }
    std::size_t fast_block_bytes() const override;
    FastBlockTail fast_block_tail() const override;
    FastSavedState fast_saved_state() const override;
    void fast_saved_state_to_g(std::span<const std::uint8_t> state, std::span<std::uint8_t> g,
                               std::vector<bool>& placed) const override;
    std::vector<bool> fast_saved_state_registers() const override;
    Result<EmittedJumpPad> emit_jump_pad(const JumpPadRequest& request) const override;
    bool pads_on_agent_stacks() const override { return true; }
    bool agent_stacks_in_goroutine_m() const override { return true; }
    bool branch_target_landing_pad(std::span<const std::uint8_t> code) const override;
    bool collects_in_line() const override { return true; }
    std::size_t interruption_window() const override;
    std::optional<std::string> interruption_hazard(std::uint64_t address,
                                                   std::span<const std::uint8_t> before,
                                                   std::span<const std::uint8_t> from,
                                                   bool stepped) const override;
    Result<std::vector<std::uint8_t>> encode_pad_jump(std::uint64_t from,
                                                      std::uint64_t to) const override;
    bool gdb_relocates_instructions() const override { return false; }
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

  private:
    std::string target_xml_;
};

} // namespace tpagent::arch::aarch64
