#include "arch/x86_64/architecture.hpp"
#include "arch/x86_64/jump_pad.hpp"
#include "arch/x86_64/relocator.hpp"
#include "arch/x86_64/ptrace_regsets.hpp"
#include "arch/x86_64/target_xml.hpp"
#include "arch/x86_64/sdt_operand.hpp"
#include <algorithm>
#include <fmt/format.h>
#include <sys/auxv.h>
#include <cpuid.h>
#include <cstddef>
#include <cstring>
#include <sys/user.h>
#include <sys/ptrace.h>
#include <sys/uio.h>
#include <elf.h>

namespace tpagent::arch::x86_64 {
namespace {

constexpr int kExpedited[] = {kRbpRegnum, kRspRegnum, kRipRegnum};
constexpr std::uint8_t kInt3[] = {0xCC};

std::uint64_t gpr_field(const RegisterSnapshot& s, std::size_t offset) {
    std::uint64_t v = 0;
    if (s.gpr.size() >= offset + sizeof v) std::memcpy(&v, s.gpr.data() + offset, sizeof v);
    return v;
}

// Room for the largest XSAVE area the CPU can have, including components the agent does not
// present (e.g. AMX tiles a task may have enabled): the kernel refuses a short buffer.
std::size_t xsave_capacity(const CpuFeatures& cpu) {
    unsigned eax = 0, ebx = 0, ecx = 0, edx = 0;
    std::size_t size = cpu.xstate_size;
    if (__get_cpuid_max(0, nullptr) >= 0xD) {
        __cpuid_count(0xD, 0, eax, ebx, ecx, edx);
        size = std::max<std::size_t>(size, ecx);
    }
    return size;
}

} // namespace

X86_64Architecture::X86_64Architecture(const CpuFeatures& cpu)
    : layout_(cpu), target_xml_(build_target_xml(layout_)), xsave_capacity_(xsave_capacity(cpu)) {}

std::span<const int> X86_64Architecture::expedited_registers() const {
    return kExpedited;
}

std::optional<std::string> X86_64Architecture::feature_xml(std::string_view annex) const {
    if (annex == "target.xml") return target_xml_;
    return std::nullopt;
}

Status X86_64Architecture::read_snapshot(pid_t tid, RegisterSnapshot& out) const {
    return read_regsets(tid, xsave_capacity_, out);
}

Status X86_64Architecture::write_snapshot(pid_t tid, const RegisterSnapshot& in) const {
    return write_regsets(tid, in);
}

Status X86_64Architecture::write_general_registers(pid_t tid, const RegisterSnapshot& in) const {
    if (in.gpr.size() < sizeof(user_regs_struct))
        return make_error(ErrorCode::BadPacket, "no general registers in the snapshot");
    iovec iov{const_cast<std::uint8_t*>(in.gpr.data()), sizeof(user_regs_struct)};
    if (ptrace(PTRACE_SETREGSET, tid, reinterpret_cast<void*>(NT_PRSTATUS), &iov) != 0)
        return make_error(ErrorCode::SystemError, "cannot write registers");
    return ok_status();
}

void X86_64Architecture::snapshot_to_g(const RegisterSnapshot& s, std::span<std::uint8_t> g,
                                       std::vector<bool>& available) const {
    layout_.snapshot_to_g(s, g, available);
}

void X86_64Architecture::g_to_snapshot(std::span<const std::uint8_t> g, RegisterSnapshot& s) const {
    layout_.g_to_snapshot(g, s);
}

std::uint64_t X86_64Architecture::pc(const RegisterSnapshot& s) const {
    return gpr_field(s, offsetof(user_regs_struct, rip));
}

void X86_64Architecture::set_pc(RegisterSnapshot& s, std::uint64_t pc) const {
    if (s.gpr.size() < sizeof(user_regs_struct)) s.gpr.resize(sizeof(user_regs_struct), 0);
    std::memcpy(s.gpr.data() + offsetof(user_regs_struct, rip), &pc, sizeof pc);
}

std::uint64_t X86_64Architecture::sp(const RegisterSnapshot& s) const {
    return gpr_field(s, offsetof(user_regs_struct, rsp));
}

std::span<const std::uint8_t> X86_64Architecture::breakpoint_instruction() const {
    return kInt3;
}

Result<Relocated> X86_64Architecture::relocate(std::span<const std::uint8_t> code,
                                               std::uint64_t from, std::uint64_t to,
                                               std::size_t min_bytes) const {
    return x86_64::relocate(code, from, to, min_bytes);
}

SdtArgument X86_64Architecture::parse_sdt_operand(std::string_view operand,
                                                  const SdtSymbolResolver& symbol) const {
    return x86_64::parse_sdt_operand(operand, symbol);
}

std::span<const std::uint8_t> X86_64Architecture::syscall_instruction() const {
    static constexpr std::uint8_t kSyscall[] = {0x0f, 0x05};
    return kSyscall;
}

void X86_64Architecture::set_syscall(RegisterSnapshot& s, long number,
                                     std::span<const std::uint64_t> args, std::uint64_t pc) const {
    if (s.gpr.size() < sizeof(user_regs_struct)) s.gpr.resize(sizeof(user_regs_struct), 0);
    user_regs_struct r;
    std::memcpy(&r, s.gpr.data(), sizeof r);
    r.rax = static_cast<unsigned long long>(number);
    // No syscall restart for the call the thread may have been stopped in.
    r.orig_rax = static_cast<unsigned long long>(-1);
    unsigned long long* slots[] = {&r.rdi, &r.rsi, &r.rdx, &r.r10, &r.r8, &r.r9};
    for (std::size_t i = 0; i < args.size() && i < 6; ++i)
        *slots[i] = args[i];
    r.rip = pc;
    std::memcpy(s.gpr.data(), &r, sizeof r);
}

std::int64_t X86_64Architecture::syscall_result(const RegisterSnapshot& s) const {
    return static_cast<std::int64_t>(gpr_field(s, offsetof(user_regs_struct, rax)));
}

std::uint64_t X86_64Architecture::first_argument(const RegisterSnapshot& s) const {
    return gpr_field(s, offsetof(user_regs_struct, rdi));
}

long X86_64Architecture::syscall_number(const RegisterSnapshot& s) const {
    return static_cast<long>(gpr_field(s, offsetof(user_regs_struct, orig_rax)));
}

std::vector<std::uint8_t> X86_64Architecture::set_call(RegisterSnapshot& s, std::uint64_t function,
                                                       std::span<const std::uint64_t> args,
                                                       std::uint64_t stack,
                                                       std::uint64_t return_address) const {
    if (s.gpr.size() < sizeof(user_regs_struct)) s.gpr.resize(sizeof(user_regs_struct), 0);
    user_regs_struct r;
    std::memcpy(&r, s.gpr.data(), sizeof r);
    unsigned long long* slots[] = {&r.rdi, &r.rsi, &r.rdx, &r.rcx, &r.r8, &r.r9};
    for (std::size_t i = 0; i < args.size() && i < 6; ++i)
        *slots[i] = args[i];
    r.rax = 0; // no vector arguments (al), should the function be variadic
    r.orig_rax = static_cast<unsigned long long>(-1);
    r.eflags &= ~0x500ull; // DF and TF clear, as at any call
    r.rsp = stack - 8;     // as right after a call: the return address pushed
    r.rip = function;
    std::memcpy(s.gpr.data(), &r, sizeof r);
    std::vector<std::uint8_t> pushed(8);
    std::memcpy(pushed.data(), &return_address, 8);
    return pushed;
}

std::uint64_t X86_64Architecture::call_result(const RegisterSnapshot& s) const {
    return gpr_field(s, offsetof(user_regs_struct, rax));
}

std::size_t X86_64Architecture::min_fast_tracepoint_length() const {
    return min_insn_len();
}

std::size_t X86_64Architecture::fast_block_bytes() const {
    return core_block_bytes(layout_);
}

Architecture::FastBlockTail X86_64Architecture::fast_block_tail() const {
    const int fs = layout_.find("fs_base"), gs = layout_.find("gs_base");
    if (fs < 0 || gs < 0) return {};
    // rdfsbase/rdgsbase work in user mode only where the kernel enabled them (Linux 5.9+);
    // the agent runs on this machine's kernel.
    constexpr unsigned long kHwcap2Fsgsbase = 1ul << 1;
    return {{fs, gs}, (getauxval(AT_HWCAP2) & kHwcap2Fsgsbase) != 0};
}

Architecture::FastBlockCompletion X86_64Architecture::fast_block_completion() const {
    return block_completion(layout_);
}

Architecture::FastSavedState X86_64Architecture::fast_saved_state() const {
    // The pad's XSAVE (FXSAVE) area lies just above the collector's frame (jump_pad.cpp).
    return {static_cast<std::uint32_t>(detect_state_save().size), kSavedStateFrameOffset};
}

void X86_64Architecture::fast_saved_state_to_g(std::span<const std::uint8_t> state,
                                               std::span<std::uint8_t> g,
                                               std::vector<bool>& placed) const {
    RegisterSnapshot snapshot;
    snapshot.xstate = pad_state_as_kernel_xstate(state, detect_state_save().mask);
    std::vector<std::uint8_t> all(layout_.g_size());
    std::vector<bool> available;
    layout_.snapshot_to_g(snapshot, all, available);
    const auto regs = layout_.registers();
    placed.resize(regs.size(), false);
    for (std::size_t i = 0; i < regs.size(); ++i) {
        if (!available[i] || regs[i].g_offset + regs[i].size > g.size()) continue;
        std::copy_n(all.begin() + regs[i].g_offset, regs[i].size, g.begin() + regs[i].g_offset);
        placed[i] = true;
    }
}

Result<EmittedJumpPad> X86_64Architecture::emit_jump_pad(const JumpPadRequest& request) const {
    JumpPadSpec spec;
    spec.pad_address = request.pad_address;
    spec.tracepoint_address = request.tracepoint_address;
    spec.collector = request.collector;
    spec.argument = request.argument;
    spec.original_code = request.original_code;
    spec.layout = &layout_;
    spec.core_block_only = !request.options.save_vector_state;
    spec.stage_full_core = request.options.stage_full_core;
    spec.flags_by_sahf = has_lahf_sahf();
    spec.agent_stacks = request.agent_stacks;
    spec.displaced_minimum = request.displaced_minimum;
    spec.gate = request.options.gate;
    if (request.options.inline_collection)
        spec.inline_collection = &*request.options.inline_collection;
    spec.state_save = request.options.save_vector_state || request.options.stage_vector_state
                          ? detect_state_save()
                          : StateSave{StateSave::Kind::None, 0, 0};
    auto pad = x86_64::emit_jump_pad(spec);
    if (!pad) return pad.error();
    return EmittedJumpPad{std::move(pad->code), pad->relocated_offset, std::move(pad->relocated),
                          std::move(pad->patch), pad->copy};
}

bool X86_64Architecture::collects_in_line() const {
    return has_lahf_sahf(); // the pad's front restores the flags with sahf
}

Result<std::vector<std::uint8_t>> X86_64Architecture::encode_pad_jump(std::uint64_t from,
                                                                      std::uint64_t to) const {
    auto jump = encode_jump(from, to);
    if (!jump) return jump.error();
    return std::vector<std::uint8_t>(jump->begin(), jump->end());
}

Result<std::vector<std::uint8_t>> X86_64Architecture::encode_short_jump(std::uint64_t from,
                                                                        std::uint64_t to) const {
    const auto d = static_cast<std::int64_t>(to - (from + 2));
    if (d < -128 || d > 127)
        return make_error(ErrorCode::Unsupported,
                          fmt::format("0x{:x} is beyond a short jump from 0x{:x}", to, from));
    return std::vector<std::uint8_t>{0xeb, static_cast<std::uint8_t>(static_cast<std::int8_t>(d))};
}

// int3 filler: compilers and linkers pad between functions with it (Go always), and a program
// that ran it would stop with SIGTRAP.
bool X86_64Architecture::never_runs(std::span<const std::uint8_t> bytes) const {
    return !bytes.empty() &&
           std::all_of(bytes.begin(), bytes.end(), [](std::uint8_t b) { return b == 0xcc; });
}

Result<std::vector<std::uint64_t>>
X86_64Architecture::pc_relative_targets(std::span<const std::uint8_t> code,
                                        std::uint64_t address) const {
    return x86_64::pc_relative_targets(code, address);
}

} // namespace tpagent::arch::x86_64

namespace tpagent::arch {

const Architecture& host_architecture() {
    static const x86_64::X86_64Architecture arch(x86_64::detect_cpu_features());
    return arch;
}

} // namespace tpagent::arch
