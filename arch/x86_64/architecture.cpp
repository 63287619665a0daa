#include "arch/x86_64/architecture.hpp"
#include "arch/x86_64/ptrace_regsets.hpp"
#include "arch/x86_64/target_xml.hpp"
#include <cpuid.h>
#include <cstddef>
#include <cstring>
#include <sys/user.h>

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

} // namespace tpagent::arch::x86_64

namespace tpagent::arch {

const Architecture& host_architecture() {
    static const x86_64::X86_64Architecture arch(x86_64::detect_cpu_features());
    return arch;
}

} // namespace tpagent::arch
