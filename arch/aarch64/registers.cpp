#include "arch/aarch64/registers.hpp"
#include <array>
#include <cerrno>
#include <cstring>
#include <elf.h>
#include <fmt/format.h>
#include <sys/auxv.h>
#include <sys/ptrace.h>
#include <sys/uio.h>

#ifndef NT_ARM_SYSTEM_CALL
#define NT_ARM_SYSTEM_CALL 0x404
#endif
#ifndef NT_ARM_TLS
#define NT_ARM_TLS 0x401
#endif
#ifndef NT_ARM_PAC_MASK
#define NT_ARM_PAC_MASK 0x406
#endif
#ifndef HWCAP_PACA
#define HWCAP_PACA (1UL << 30)
#endif

namespace tpagent::arch::aarch64 {
namespace {

// Pointer authentication in this process's CPU (tpagent runs on the board it debugs): then
// the masks gdb strips signed return addresses with come after the FP registers, as the
// kernel's NT_ARM_PAC_MASK gives them.
bool has_pauth() {
#if defined(__aarch64__)
    return (getauxval(AT_HWCAP) & HWCAP_PACA) != 0;
#else
    return false;
#endif
}

// x0..x30, sp, pc (8 bytes), cpsr (4), v0..v31 (16), fpsr, fpcr (4): 788 bytes, as gdbserver;
// then pauth_dmask and pauth_cmask (8) where the CPU signs pointers, then tpidr (8).
const std::vector<RegisterDesc> kRegisters = [] {
    static const char* const names[] = {
        "x0",  "x1",  "x2",  "x3",  "x4",  "x5",  "x6",   "x7",  "x8",  "x9",   "x10", "x11",
        "x12", "x13", "x14", "x15", "x16", "x17", "x18",  "x19", "x20", "x21",  "x22", "x23",
        "x24", "x25", "x26", "x27", "x28", "x29", "x30",  "sp",  "pc",  "cpsr", "v0",  "v1",
        "v2",  "v3",  "v4",  "v5",  "v6",  "v7",  "v8",   "v9",  "v10", "v11",  "v12", "v13",
        "v14", "v15", "v16", "v17", "v18", "v19", "v20",  "v21", "v22", "v23",  "v24", "v25",
        "v26", "v27", "v28", "v29", "v30", "v31", "fpsr", "fpcr"};
    std::vector<RegisterDesc> out;
    std::uint32_t offset = 0;
    auto add = [&](const char* name, std::uint32_t size) {
        out.push_back({name, size, offset});
        offset += size;
    };
    for (int i = 0; i <= kFpcrRegnum; ++i)
        add(names[i], i <= kPcRegnum ? 8 : i == kCpsrRegnum || i >= kFpsrRegnum ? 4 : 16);
    if (has_pauth()) {
        add("pauth_dmask", 8);
        add("pauth_cmask", 8);
    }
    add("tpidr", 8);
    return out;
}();
const std::size_t kTpidrRegnum = kRegisters.size() - 1;

Error ptrace_error(const char* what, pid_t tid, int err) {
    return make_error(err == ESRCH ? ErrorCode::NoProcess : ErrorCode::SystemError,
                      fmt::format("{} for thread {}: {}", what, tid, std::strerror(err)));
}

Status get_regset(pid_t tid, int note, std::uint8_t* data, std::size_t size, const char* what) {
    iovec iov{data, size};
    if (ptrace(PTRACE_GETREGSET, tid, reinterpret_cast<void*>(static_cast<long>(note)), &iov) != 0)
        return ptrace_error(what, tid, errno);
    return ok_status();
}

Status set_regset(pid_t tid, int note, const std::uint8_t* data, std::size_t size,
                  const char* what) {
    iovec iov{const_cast<std::uint8_t*>(data), size};
    if (ptrace(PTRACE_SETREGSET, tid, reinterpret_cast<void*>(static_cast<long>(note)), &iov) != 0)
        return ptrace_error(what, tid, errno);
    return ok_status();
}

// Named bit fields of a register, as gdb shows them (a target description's <flags>).
struct Field {
    const char* name;
    int start, end;
};
constexpr Field kCpsrFlags[] = {
    {"SP", 0, 0},   {"EL", 2, 3},    {"nRW", 4, 4},     {"F", 6, 6},      {"I", 7, 7},
    {"A", 8, 8},    {"D", 9, 9},     {"BTYPE", 10, 11}, {"SSBS", 12, 12}, {"IL", 20, 20},
    {"SS", 21, 21}, {"PAN", 22, 22}, {"UAO", 23, 23},   {"DIT", 24, 24},  {"TCO", 25, 25},
    {"V", 28, 28},  {"C", 29, 29},   {"Z", 30, 30},     {"N", 31, 31}};
constexpr Field kFpsrFlags[] = {{"IOC", 0, 0}, {"DZC", 1, 1}, {"OFC", 2, 2},  {"UFC", 3, 3},
                                {"IXC", 4, 4}, {"IDC", 7, 7}, {"QC", 27, 27}, {"V", 28, 28},
                                {"C", 29, 29}, {"Z", 30, 30}, {"N", 31, 31}};
constexpr Field kFpcrFlags[] = {
    {"FIZ", 0, 0},   {"AH", 1, 1},     {"NEP", 2, 2},      {"IOE", 8, 8},     {"DZE", 9, 9},
    {"OFE", 10, 10}, {"UFE", 11, 11},  {"IXE", 12, 12},    {"EBF", 13, 13},   {"IDE", 15, 15},
    {"Len", 16, 18}, {"FZ16", 19, 19}, {"Stride", 20, 21}, {"RMode", 22, 23}, {"FZ", 24, 24},
    {"DN", 25, 25},  {"AHP", 26, 26}};

struct Vector {
    const char* id;
    const char* type;
    int count;
};
// The lanes a v register is seen as.
constexpr Vector kVectors[] = {
    {"v2d", "ieee_double", 2}, {"v2u", "uint64", 2},  {"v2i", "int64", 2},
    {"v4f", "ieee_single", 4}, {"v4u", "uint32", 4},  {"v4i", "int32", 4},
    {"v8u", "uint16", 8},      {"v8i", "int16", 8},   {"v16u", "uint8", 16},
    {"v16i", "int8", 16},      {"v1u", "uint128", 1}, {"v1i", "int128", 1}};

std::string flags_xml(const char* id, std::span<const Field> fields) {
    std::string xml = fmt::format("    <flags id=\"{}\" size=\"4\">\n", id);
    for (const Field& f : fields)
        xml += fmt::format("      <field name=\"{}\" start=\"{}\" end=\"{}\"/>\n", f.name, f.start,
                           f.end);
    return xml + "    </flags>\n";
}

} // namespace

std::span<const RegisterDesc> registers() {
    return kRegisters;
}

std::size_t g_size() {
    return kRegisters.back().g_offset + kRegisters.back().size;
}

std::uint64_t x(const RegisterSnapshot& s, int n) {
    std::uint64_t v = 0;
    const std::size_t at = static_cast<std::size_t>(n) * 8;
    if (s.gpr.size() >= at + 8) std::memcpy(&v, s.gpr.data() + at, 8);
    return v;
}

void set_x(RegisterSnapshot& s, int n, std::uint64_t value) {
    if (s.gpr.size() < kGprBytes) s.gpr.resize(kGprBytes, 0);
    std::memcpy(s.gpr.data() + static_cast<std::size_t>(n) * 8, &value, 8);
}

void snapshot_to_g(const RegisterSnapshot& s, std::span<std::uint8_t> g,
                   std::vector<bool>& available) {
    available.assign(kRegisters.size(), false);
    std::fill(g.begin(), g.end(), 0);
    if (s.gpr.size() >= kPtRegsBytes) {
        // x0..x30, sp, pc, then the low half of pstate as cpsr: the same order as the kernel.
        std::memcpy(g.data(), s.gpr.data(), 33 * 8 + 4);
        for (int r = 0; r <= kCpsrRegnum; ++r)
            available[static_cast<std::size_t>(r)] = true;
    }
    if (s.xstate.size() >= kFpsimdBytes - 8) {
        const auto& v0 = kRegisters[kFirstVRegnum];
        std::memcpy(g.data() + v0.g_offset, s.xstate.data(), 32 * 16 + 8); // v0..v31, fpsr, fpcr
        for (int r = kFirstVRegnum; r <= kFpcrRegnum; ++r)
            available[static_cast<std::size_t>(r)] = true;
    }
    if (s.xstate.size() >= kXstateBytes) {
        if (has_pauth()) {
            std::memcpy(g.data() + kRegisters[kPauthDmaskRegnum].g_offset,
                        s.xstate.data() + kPacMaskOffset, 16);
            available[kPauthDmaskRegnum] = available[kPauthDmaskRegnum + 1] = true;
        }
        std::memcpy(g.data() + kRegisters[kTpidrRegnum].g_offset, s.xstate.data() + kTlsOffset, 8);
        available[kTpidrRegnum] = true;
    }
}

void g_to_snapshot(std::span<const std::uint8_t> g, RegisterSnapshot& s) {
    if (g.size() < g_size()) return;
    if (s.gpr.size() < kGprBytes) s.gpr.resize(kGprBytes, 0);
    std::memcpy(s.gpr.data(), g.data(), 33 * 8 + 4); // pstate's high half is kept
    if (!s.xstate.empty()) {
        if (s.xstate.size() < kFpsimdBytes) s.xstate.resize(kFpsimdBytes, 0);
        std::memcpy(s.xstate.data(), g.data() + kRegisters[kFirstVRegnum].g_offset, 32 * 16 + 8);
    }
}

Status read_general_regsets(pid_t tid, RegisterSnapshot& out) {
    out.gpr.assign(kGprBytes, 0);
    if (auto r = get_regset(tid, NT_PRSTATUS, out.gpr.data(), kPtRegsBytes,
                            "PTRACE_GETREGSET(NT_PRSTATUS)");
        !r)
        return r;
    // The syscall number the thread would restart: kept, so a snapshot written back restores it.
    // A kernel without the regset has no restart to keep: -1.
    std::int32_t syscallno = -1;
    if (!get_regset(tid, NT_ARM_SYSTEM_CALL, reinterpret_cast<std::uint8_t*>(&syscallno),
                    sizeof syscallno, "PTRACE_GETREGSET(NT_ARM_SYSTEM_CALL)"))
        syscallno = -1;
    std::memcpy(out.gpr.data() + kSyscallNoOffset, &syscallno, sizeof syscallno);
    return ok_status();
}

Status read_all_regsets(pid_t tid, RegisterSnapshot& out) {
    if (auto r = read_general_regsets(tid, out); !r) return r;
    out.xstate.assign(kXstateBytes, 0);
    if (auto r = get_regset(tid, NT_PRFPREG, out.xstate.data(), kFpsimdBytes,
                            "PTRACE_GETREGSET(NT_PRFPREG)");
        !r)
        return r;
    // Read-only extras; one the kernel refuses reads as zero.
    if (has_pauth())
        (void)get_regset(tid, NT_ARM_PAC_MASK, out.xstate.data() + kPacMaskOffset, 16,
                         "PTRACE_GETREGSET(NT_ARM_PAC_MASK)");
    (void)get_regset(tid, NT_ARM_TLS, out.xstate.data() + kTlsOffset, 8,
                     "PTRACE_GETREGSET(NT_ARM_TLS)");
    return ok_status();
}

Status write_general_regsets(pid_t tid, const RegisterSnapshot& in) {
    if (in.gpr.size() < kPtRegsBytes)
        return make_error(ErrorCode::BadPacket, "no general registers in the snapshot");
    if (in.gpr.size() >= kGprBytes)
        if (auto r = set_regset(tid, NT_ARM_SYSTEM_CALL, in.gpr.data() + kSyscallNoOffset, 4,
                                "PTRACE_SETREGSET(NT_ARM_SYSTEM_CALL)");
            !r)
            return r;
    return set_regset(tid, NT_PRSTATUS, in.gpr.data(), kPtRegsBytes,
                      "PTRACE_SETREGSET(NT_PRSTATUS)");
}

Status write_all_regsets(pid_t tid, const RegisterSnapshot& in) {
    if (auto r = write_general_regsets(tid, in); !r) return r;
    if (in.xstate.size() < kFpsimdBytes) return ok_status();
    return set_regset(tid, NT_PRFPREG, in.xstate.data(), kFpsimdBytes,
                      "PTRACE_SETREGSET(NT_PRFPREG)");
}

std::string target_xml() {
    std::string xml = R"(<?xml version="1.0"?>
<!DOCTYPE target SYSTEM "gdb-target.dtd">
<target>
  <architecture>aarch64</architecture>
  <osabi>GNU/Linux</osabi>
  <feature name="org.gnu.gdb.aarch64.core">
)";
    xml += flags_xml("cpsr_flags", kCpsrFlags);
    for (int r = 0; r <= 30; ++r)
        xml += fmt::format("    <reg name=\"x{}\" bitsize=\"64\" type=\"int\" regnum=\"{}\"/>\n", r,
                           r);
    xml += R"(    <reg name="sp" bitsize="64" type="data_ptr"/>
    <reg name="pc" bitsize="64" type="code_ptr"/>
    <reg name="cpsr" bitsize="32" type="cpsr_flags"/>
  </feature>
  <feature name="org.gnu.gdb.aarch64.fpu">
)";
    for (const auto& v : kVectors)
        xml += fmt::format("    <vector id=\"{}\" type=\"{}\" count=\"{}\"/>\n", v.id, v.type,
                           v.count);
    xml +=
        R"(    <union id="vnd"><field name="f" type="v2d"/><field name="u" type="v2u"/><field name="s" type="v2i"/></union>
    <union id="vns"><field name="f" type="v4f"/><field name="u" type="v4u"/><field name="s" type="v4i"/></union>
    <union id="vnh"><field name="u" type="v8u"/><field name="s" type="v8i"/></union>
    <union id="vnb"><field name="u" type="v16u"/><field name="s" type="v16i"/></union>
    <union id="vnq"><field name="u" type="v1u"/><field name="s" type="v1i"/></union>
)";
    xml += flags_xml("fpsr_flags", kFpsrFlags);
    xml += flags_xml("fpcr_flags", kFpcrFlags);
    xml +=
        R"(    <union id="aarch64v"><field name="d" type="vnd"/><field name="s" type="vns"/><field name="h" type="vnh"/><field name="b" type="vnb"/><field name="q" type="vnq"/></union>
)";
    for (int r = 0; r < 32; ++r)
        xml +=
            fmt::format("    <reg name=\"v{}\" bitsize=\"128\" type=\"aarch64v\" regnum=\"{}\"/>\n",
                        r, kFirstVRegnum + r);
    xml += R"(    <reg name="fpsr" bitsize="32" type="fpsr_flags"/>
    <reg name="fpcr" bitsize="32" type="fpcr_flags"/>
  </feature>
)";
    if (has_pauth())
        xml += R"(  <feature name="org.gnu.gdb.aarch64.pauth">
    <reg name="pauth_dmask" bitsize="64"/>
    <reg name="pauth_cmask" bitsize="64"/>
  </feature>
)";
    xml += R"(  <feature name="org.gnu.gdb.aarch64.tls">
    <reg name="tpidr" bitsize="64" type="data_ptr"/>
  </feature>
)";
    xml += "</target>\n";
    return xml;
}

} // namespace tpagent::arch::aarch64
