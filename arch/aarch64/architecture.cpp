#include "arch/aarch64/architecture.hpp"
#include "arch/aarch64/exclusive_sequence.hpp"
#include "arch/aarch64/jump_pad.hpp"
#include "arch/aarch64/registers.hpp"
#include "arch/aarch64/relocator.hpp"
#include "arch/aarch64/sdt_operand.hpp"
#include <cstring>
#include <sys/auxv.h>

namespace tpagent::arch::aarch64 {
namespace {
constexpr int kExpedited[] = {kFpRegnum, kSpRegnum, kPcRegnum};
constexpr std::uint8_t kBrk0[] = {0x00, 0x00, 0x20, 0xd4}; // brk #0, as gdb's own
constexpr std::uint8_t kSvc0[] = {0x01, 0x00, 0x00, 0xd4}; // svc #0
constexpr unsigned long kHwcap2Sme = 1ul << 23;            // HWCAP2_SME (asm/hwcap.h)
// A pad must be reachable by B from its code, and its own branches too: keep a page's slack.
constexpr std::uint64_t kPadReach = static_cast<std::uint64_t>(kBranchReach) - (1u << 20);
} // namespace

Aarch64Architecture::Aarch64Architecture() : target_xml_(aarch64::target_xml(host_layout())) {}

std::span<const RegisterDesc> Aarch64Architecture::registers() const {
    return aarch64::registers();
}
std::size_t Aarch64Architecture::g_size() const {
    return aarch64::g_size();
}
std::span<const int> Aarch64Architecture::expedited_registers() const {
    return kExpedited;
}
int Aarch64Architecture::pc_regnum() const {
    return kPcRegnum;
}

std::optional<std::string> Aarch64Architecture::feature_xml(std::string_view annex) const {
    if (annex == "target.xml") return target_xml_;
    return std::nullopt;
}

Status Aarch64Architecture::read_snapshot(pid_t tid, RegisterSnapshot& out) const {
    return read_all_regsets(host_layout(), tid, out);
}
Status Aarch64Architecture::read_general_registers(pid_t tid, RegisterSnapshot& out) const {
    return read_general_regsets(tid, out);
}
Status Aarch64Architecture::write_snapshot(pid_t tid, const RegisterSnapshot& in) const {
    return write_all_regsets(host_layout(), tid, in);
}
Status Aarch64Architecture::write_general_registers(pid_t tid, const RegisterSnapshot& in) const {
    return write_general_regsets(tid, in);
}
void Aarch64Architecture::snapshot_to_g(const RegisterSnapshot& s, std::span<std::uint8_t> g,
                                        std::vector<bool>& available) const {
    aarch64::snapshot_to_g(host_layout(), s, g, available);
}
void Aarch64Architecture::g_to_snapshot(std::span<const std::uint8_t> g,
                                        RegisterSnapshot& s) const {
    aarch64::g_to_snapshot(host_layout(), g, s);
}

std::uint64_t Aarch64Architecture::pc(const RegisterSnapshot& s) const {
    return x(s, kPcRegnum);
}
void Aarch64Architecture::set_pc(RegisterSnapshot& s, std::uint64_t pc) const {
    set_x(s, kPcRegnum, pc);
}
std::uint64_t Aarch64Architecture::sp(const RegisterSnapshot& s) const {
    return x(s, kSpRegnum);
}

std::span<const std::uint8_t> Aarch64Architecture::breakpoint_instruction() const {
    return kBrk0;
}

Result<Relocated> Aarch64Architecture::relocate(std::span<const std::uint8_t> code,
                                                std::uint64_t from, std::uint64_t to,
                                                std::size_t min_bytes) const {
    if (min_bytes > 4)
        return make_error(ErrorCode::Unsupported, "one AArch64 instruction at a time");
    return aarch64::relocate(code, from, to);
}
std::uint64_t Aarch64Architecture::pad_reach() const {
    return kPadReach;
}

std::size_t Aarch64Architecture::fast_block_bytes() const {
    const auto& cpsr = host_layout().regs[kCpsrRegnum];
    return cpsr.g_offset + cpsr.size == kCoreBlockBytes ? kCoreBlockBytes : 0;
}

// tpidr, for TLS variables in tfind: EL0 reads it with an mrs.
Architecture::FastBlockTail Aarch64Architecture::fast_block_tail() const {
    const Layout& l = host_layout();
    std::vector<int> masks;
    if (l.pauth) masks = {static_cast<int>(l.pauth_regnum), static_cast<int>(l.pauth_regnum + 1)};
    return {{static_cast<int>(l.tpidr_regnum)}, true, std::move(masks)};
}

Architecture::FastSavedState Aarch64Architecture::fast_saved_state() const {
    return {vector_state_bytes(host_layout()), 0}; // from the frame on (pad_vector_state.hpp)
}

void Aarch64Architecture::fast_saved_state_to_g(std::span<const std::uint8_t> state,
                                                std::span<std::uint8_t> g,
                                                std::vector<bool>& placed) const {
    vector_state_to_g(host_layout(), state, g, placed);
}

std::vector<bool> Aarch64Architecture::fast_saved_state_registers() const {
    return vector_state_registers(host_layout());
}

// The pad saves general registers, and the FP/SIMD and SVE state only for tracepoints that
// collect it (FastPadOptions::save_vector_state is not honoured: the collector is built
// without FP/SIMD).
Result<EmittedJumpPad> Aarch64Architecture::emit_jump_pad(const JumpPadRequest& request) const {
    JumpPadSpec spec;
    spec.agent_stacks = request.agent_stacks;
    spec.stage_vector_state = request.options.stage_vector_state;
    spec.vector_state.sve = host_layout().sve_vl != 0;
    spec.vector_state.sme = (getauxval(AT_HWCAP2) & kHwcap2Sme) != 0;
    spec.pad_address = request.pad_address;
    spec.tracepoint_address = request.tracepoint_address;
    spec.collector = request.collector;
    spec.argument = request.argument;
    spec.original_code = request.original_code;
    spec.branch_target_guarded = request.branch_target_guarded;
    if (request.agent_stacks.pool == 0) spec.gate = request.options.gate;
    if (request.options.inline_collection)
        spec.inline_collection = &*request.options.inline_collection;
    return aarch64::emit_jump_pad(spec);
}
bool Aarch64Architecture::branch_target_landing_pad(std::span<const std::uint8_t> code) const {
    std::uint32_t insn = 0;
    if (code.size() < 4) return false;
    std::memcpy(&insn, code.data(), 4);
    return aarch64::landing_pad(insn);
}

std::size_t Aarch64Architecture::interruption_window() const {
    return kExclusiveWindowBytes;
}
std::optional<std::string>
Aarch64Architecture::interruption_hazard(std::uint64_t address,
                                         std::span<const std::uint8_t> before,
                                         std::span<const std::uint8_t> from, bool stepped) const {
    return inside_exclusive_sequence(address, before, from, stepped);
}

Result<std::vector<std::uint8_t>> Aarch64Architecture::encode_pad_jump(std::uint64_t from,
                                                                       std::uint64_t to) const {
    auto b = encode_branch(from, to);
    if (!b) return b.error();
    std::vector<std::uint8_t> out(4);
    std::memcpy(out.data(), &*b, 4);
    return out;
}
Result<std::vector<std::uint64_t>>
Aarch64Architecture::pc_relative_targets(std::span<const std::uint8_t>, std::uint64_t) const {
    // Never asked: gdb does not relocate arm64 instructions (gdb_relocates_instructions()).
    return make_error(ErrorCode::Unsupported, "gdb does not relocate arm64 instructions");
}

SdtArgument Aarch64Architecture::parse_sdt_operand(std::string_view operand,
                                                   const SdtSymbolResolver& symbol) const {
    return aarch64::parse_sdt_operand(operand, symbol);
}

std::span<const std::uint8_t> Aarch64Architecture::syscall_instruction() const {
    return kSvc0;
}
void Aarch64Architecture::set_syscall(RegisterSnapshot& s, long number,
                                      std::span<const std::uint64_t> args, std::uint64_t pc) const {
    set_x(s, 8, static_cast<std::uint64_t>(number));
    for (std::size_t i = 0; i < args.size() && i < 6; ++i)
        set_x(s, static_cast<int>(i), args[i]);
    set_x(s, kPcRegnum, pc);
    // No restart of the call the thread may have been stopped in (it would rewind the pc and
    // put orig_x0 back over our first argument): the kernel's syscallno becomes -1.
    const std::int32_t none = -1;
    std::memcpy(s.gpr.data() + kSyscallNoOffset, &none, sizeof none);
}
std::int64_t Aarch64Architecture::syscall_result(const RegisterSnapshot& s) const {
    return static_cast<std::int64_t>(x(s, 0));
}
std::uint64_t Aarch64Architecture::first_argument(const RegisterSnapshot& s) const {
    return x(s, 0);
}
long Aarch64Architecture::syscall_number(const RegisterSnapshot& s) const {
    std::int32_t number = -1;
    if (s.gpr.size() >= kSyscallNoOffset + sizeof number)
        std::memcpy(&number, s.gpr.data() + kSyscallNoOffset, sizeof number);
    return number;
}
std::vector<std::uint8_t> Aarch64Architecture::set_call(RegisterSnapshot& s, std::uint64_t function,
                                                        std::span<const std::uint64_t> args,
                                                        std::uint64_t stack,
                                                        std::uint64_t return_address) const {
    for (std::size_t i = 0; i < args.size() && i < 8; ++i)
        set_x(s, static_cast<int>(i), args[i]);
    set_x(s, 30, return_address); // lr
    set_x(s, kSpRegnum, stack);
    set_x(s, kPcRegnum, function);
    const std::int32_t none = -1; // no restart of a system call the thread was stopped in
    std::memcpy(s.gpr.data() + kSyscallNoOffset, &none, sizeof none);
    return {};
}
std::uint64_t Aarch64Architecture::call_result(const RegisterSnapshot& s) const {
    return x(s, 0);
}

} // namespace tpagent::arch::aarch64

const tpagent::arch::Architecture& tpagent::arch::host_architecture() {
    static const aarch64::Aarch64Architecture arch;
    return arch;
}
