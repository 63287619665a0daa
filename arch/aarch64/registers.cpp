#include "arch/aarch64/registers.hpp"
#include "base/system_error.hpp"
#include <algorithm>
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
#ifndef NT_ARM_SVE
#define NT_ARM_SVE 0x405
#endif
#ifndef HWCAP_PACA
#define HWCAP_PACA (1UL << 30)
#endif
#if defined(__aarch64__)
#include <sys/prctl.h>
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

// This CPU's SVE vector length in bytes (0 without SVE): a program tpagent starts inherits the
// system default, as tpagent itself did.
unsigned host_sve_vl() {
#if defined(__aarch64__)
    if ((getauxval(AT_HWCAP) & HWCAP_SVE) == 0) return 0;
    const int vl = prctl(PR_SVE_GET_VL);
    if (vl < 0) return 0;
    return static_cast<unsigned>(vl & PR_SVE_VL_LEN_MASK);
#else
    return 0;
#endif
}

// NT_ARM_SVE: a 16-byte user_sve_header, then in SVE mode z0..z31 (vl bytes each), p0..p15 and
// ffr (vl/8 each), fpsr and fpcr at the next 16-byte boundary; in FP/SIMD mode a
// user_fpsimd_state.
constexpr std::size_t kSveRegsetHeader = 16;
constexpr std::uint16_t kSveModeFlag = 1; // SVE_PT_REGS_SVE
std::size_t sve_payload_bytes(unsigned vl) {
    return 32 * vl + 17 * (vl / 8);
}
std::size_t sve_fpsr_offset(unsigned vl) {
    return (kSveRegsetHeader + sve_payload_bytes(vl) + 15) / 16 * 16;
}
std::size_t sve_regset_bytes(unsigned vl) {
    return (sve_fpsr_offset(vl) + 8 + 15) / 16 * 16;
}

std::uint16_t sve_thread_vl(const RegisterSnapshot& s) {
    std::uint16_t vl = 0;
    if (s.xstate.size() >= kSveOffset + kSveHeaderBytes)
        std::memcpy(&vl, s.xstate.data() + kSveOffset, 2);
    return vl;
}
// The snapshot holds SVE registers of the length the layout describes.
bool has_sve_state(const Layout& layout, const RegisterSnapshot& s) {
    return layout.sve_vl != 0 && s.xstate.size() >= layout.xstate_bytes &&
           sve_thread_vl(s) == layout.sve_vl;
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

// An SVE z register's lanes, as gdb names them: svev<letter><f|u|s>.
struct SveLane {
    char letter;
    unsigned bits;
    const char* f; // the floating-point view, where there is one
    const char* u;
    const char* s;
};
constexpr SveLane kSveLanes[] = {{'q', 128, nullptr, "uint128", "int128"},
                                 {'d', 64, "ieee_double", "uint64", "int64"},
                                 {'s', 32, "ieee_single", "uint32", "int32"},
                                 {'h', 16, "ieee_half", "uint16", "int16"},
                                 {'b', 8, nullptr, "uint8", "int8"}};

// Without SVE: v0..v31 (128 bits), fpsr, fpcr.
std::string fpu_feature_xml() {
    std::string xml = "  <feature name=\"org.gnu.gdb.aarch64.fpu\">\n";
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
    return xml;
}

// With SVE, as gdb describes it: z0..z31 of the vector length, fpsr, fpcr, p0..p15 and ffr (a bit
// per byte of z), vg. gdb shows v0..v31 as z's low 128 bits itself.
std::string sve_feature_xml(unsigned vl) {
    std::string xml = "  <feature name=\"org.gnu.gdb.aarch64.sve\">\n";
    std::string lanes_union = "    <union id=\"svev\">";
    for (const SveLane& lane : kSveLanes) {
        const unsigned count = vl * 8 / lane.bits;
        std::string u = fmt::format("    <union id=\"svevn{}\">", lane.letter);
        for (const auto& [field, type] :
             {std::pair{'f', lane.f}, std::pair{'u', lane.u}, std::pair{'s', lane.s}}) {
            if (type == nullptr) continue;
            xml += fmt::format("    <vector id=\"svev{}{}\" type=\"{}\" count=\"{}\"/>\n",
                               lane.letter, field, type, count);
            u += fmt::format("<field name=\"{}\" type=\"svev{}{}\"/>", field, lane.letter, field);
        }
        xml += u + "</union>\n";
        lanes_union +=
            fmt::format("<field name=\"{}\" type=\"svevn{}\"/>", lane.letter, lane.letter);
    }
    xml += lanes_union + "</union>\n";
    xml += flags_xml("fpsr_flags", kFpsrFlags);
    xml += flags_xml("fpcr_flags", kFpcrFlags);
    xml += fmt::format("    <vector id=\"svep\" type=\"uint8\" count=\"{}\"/>\n", vl / 8);
    for (int r = 0; r < 32; ++r)
        xml += fmt::format("    <reg name=\"z{}\" bitsize=\"{}\" type=\"svev\" regnum=\"{}\"/>\n",
                           r, vl * 8, kFirstVRegnum + r);
    xml += R"(    <reg name="fpsr" bitsize="32" type="fpsr_flags"/>
    <reg name="fpcr" bitsize="32" type="fpcr_flags"/>
)";
    for (int r = 0; r < 16; ++r)
        xml += fmt::format("    <reg name=\"p{}\" bitsize=\"{}\" type=\"svep\" regnum=\"{}\"/>\n",
                           r, vl, kFirstPRegnum + r);
    xml += fmt::format("    <reg name=\"ffr\" bitsize=\"{}\" type=\"svep\"/>\n", vl);
    xml += "    <reg name=\"vg\" bitsize=\"64\" type=\"int\"/>\n  </feature>\n";
    return xml;
}

} // namespace

Layout make_layout(unsigned sve_vl, bool pauth) {
    Layout l;
    l.sve_vl = sve_vl > kMaxSveVl ? 0 : sve_vl / 16 * 16;
    l.pauth = pauth;
    std::uint32_t offset = 0;
    auto add = [&](std::string name, std::uint32_t size) {
        l.names.push_back(std::move(name));
        l.regs.push_back({nullptr, size, offset});
        offset += size;
    };
    // x0..x30, sp, pc (8 bytes), cpsr (4), v0..v31 (16), fpsr, fpcr (4): 788 bytes, as
    // gdbserver. With SVE, z0..z31 take the v registers' numbers (gdb shows v as their low
    // halves), and p0..p15, ffr and vg follow fpcr.
    for (int r = 0; r <= 30; ++r)
        add(fmt::format("x{}", r), 8);
    add("sp", 8);
    add("pc", 8);
    add("cpsr", 4);
    for (int r = 0; r < 32; ++r)
        add(fmt::format("{}{}", l.sve_vl ? 'z' : 'v', r), l.sve_vl ? l.sve_vl : 16);
    add("fpsr", 4);
    add("fpcr", 4);
    if (l.sve_vl) {
        for (int r = 0; r < 16; ++r)
            add(fmt::format("p{}", r), l.sve_vl / 8);
        add("ffr", l.sve_vl / 8);
        add("vg", 8);
    }
    if (pauth) {
        l.pauth_regnum = l.regs.size();
        add("pauth_dmask", 8);
        add("pauth_cmask", 8);
    }
    l.tpidr_regnum = l.regs.size();
    add("tpidr", 8);
    for (std::size_t i = 0; i < l.regs.size(); ++i)
        l.regs[i].name = l.names[i].c_str();
    l.g_size = offset;
    l.xstate_bytes =
        l.sve_vl ? kSveOffset + kSveHeaderBytes + sve_payload_bytes(l.sve_vl) : kXstateBytes;
    return l;
}

const Layout& host_layout() {
    static const Layout layout = make_layout(host_sve_vl(), has_pauth());
    return layout;
}

std::span<const RegisterDesc> registers() {
    return host_layout().regs;
}

std::size_t g_size() {
    return host_layout().g_size;
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

void snapshot_to_g(const Layout& layout, const RegisterSnapshot& s, std::span<std::uint8_t> g,
                   std::vector<bool>& available) {
    const auto& regs = layout.regs;
    available.assign(regs.size(), false);
    std::fill(g.begin(), g.end(), 0);
    auto put = [&](std::size_t regnum, const std::uint8_t* from) {
        std::memcpy(g.data() + regs[regnum].g_offset, from, regs[regnum].size);
        available[regnum] = true;
    };
    if (s.gpr.size() >= kPtRegsBytes) {
        // x0..x30, sp, pc, then the low half of pstate as cpsr: the same order as the kernel.
        std::memcpy(g.data(), s.gpr.data(), 33 * 8 + 4);
        for (int r = 0; r <= kCpsrRegnum; ++r)
            available[static_cast<std::size_t>(r)] = true;
    }
    if (s.xstate.size() >= kFpsimdBytes - 8) {
        if (layout.sve_vl == 0) {
            for (std::size_t r = 0; r < 32; ++r)
                put(kFirstVRegnum + r, s.xstate.data() + r * 16);
        } else if (has_sve_state(layout, s)) {
            // z0..z31, then (after fpsr, fpcr) p0..p15 and ffr: the snapshot's order.
            const std::uint8_t* sve = s.xstate.data() + kSveOffset + kSveHeaderBytes;
            for (std::size_t r = 0; r < 32; ++r)
                put(kFirstVRegnum + r, sve + r * layout.sve_vl);
            for (std::size_t r = 0; r < 17; ++r)
                put(kFirstPRegnum + r, sve + 32 * layout.sve_vl + r * (layout.sve_vl / 8));
        }
        put(kFpsrRegnum, s.xstate.data() + 32 * 16);
        put(kFpcrRegnum, s.xstate.data() + 32 * 16 + 4);
    }
    if (layout.sve_vl != 0 && s.xstate.size() >= kSveOffset + kSveHeaderBytes) {
        // The thread's own length, even where it differs from the description (then its z, p
        // and ffr are unavailable): vg counts 64-bit granules.
        const std::uint64_t vg = sve_thread_vl(s) / 8;
        put(kFirstPRegnum + 17, reinterpret_cast<const std::uint8_t*>(&vg));
    }
    if (s.xstate.size() >= kXstateBytes) {
        if (layout.pauth) {
            put(layout.pauth_regnum, s.xstate.data() + kPacMaskOffset);
            put(layout.pauth_regnum + 1, s.xstate.data() + kPacMaskOffset + 8);
        }
        put(layout.tpidr_regnum, s.xstate.data() + kTlsOffset);
    }
}

void g_to_snapshot(const Layout& layout, std::span<const std::uint8_t> g, RegisterSnapshot& s) {
    if (g.size() < layout.g_size) return;
    if (s.gpr.size() < kGprBytes) s.gpr.resize(kGprBytes, 0);
    std::memcpy(s.gpr.data(), g.data(), 33 * 8 + 4); // pstate's high half is kept
    if (s.xstate.empty()) return;
    if (s.xstate.size() < kFpsimdBytes) s.xstate.resize(kFpsimdBytes, 0);
    const auto& regs = layout.regs;
    const bool sve = has_sve_state(layout, s);
    std::uint8_t* sve_regs = s.xstate.data() + kSveOffset + kSveHeaderBytes;
    for (std::size_t r = 0; r < 32; ++r) {
        const std::uint8_t* from = g.data() + regs[kFirstVRegnum + r].g_offset;
        // v is z's low 128 bits: both kept, whichever regset is written back.
        std::memcpy(s.xstate.data() + r * 16, from, 16);
        if (sve) std::memcpy(sve_regs + r * layout.sve_vl, from, layout.sve_vl);
    }
    std::memcpy(s.xstate.data() + 32 * 16, g.data() + regs[kFpsrRegnum].g_offset, 4);
    std::memcpy(s.xstate.data() + 32 * 16 + 4, g.data() + regs[kFpcrRegnum].g_offset, 4);
    if (sve)
        std::memcpy(sve_regs + 32 * layout.sve_vl, g.data() + regs[kFirstPRegnum].g_offset,
                    17 * (layout.sve_vl / 8));
}

void sve_from_regset(const Layout& layout, std::span<const std::uint8_t> regset,
                     RegisterSnapshot& s) {
    if (layout.sve_vl == 0 || regset.size() < kSveRegsetHeader) return;
    std::uint16_t vl = 0, flags = 0;
    std::memcpy(&vl, regset.data() + 8, 2);
    std::memcpy(&flags, regset.data() + 12, 2);
    s.xstate.resize(layout.xstate_bytes, 0);
    std::uint8_t* header = s.xstate.data() + kSveOffset;
    const std::uint16_t mode = flags & kSveModeFlag;
    std::memcpy(header, &vl, 2);
    std::memcpy(header + 2, &mode, 2);
    std::uint8_t* sve_regs = header + kSveHeaderBytes;
    std::fill(sve_regs, sve_regs + sve_payload_bytes(layout.sve_vl), 0);
    if (vl != layout.sve_vl) return; // described as unavailable
    if (mode == kSveModeFlag) {
        if (regset.size() >= kSveRegsetHeader + sve_payload_bytes(vl))
            std::memcpy(sve_regs, regset.data() + kSveRegsetHeader, sve_payload_bytes(vl));
        return;
    }
    // FP/SIMD mode: z is v with zeroed upper bits, p and ffr are zero.
    if (regset.size() < kSveRegsetHeader + 32 * 16) return;
    for (std::size_t r = 0; r < 32; ++r)
        std::memcpy(sve_regs + r * vl, regset.data() + kSveRegsetHeader + r * 16, 16);
}

std::vector<std::uint8_t> sve_to_regset(const Layout& layout, const RegisterSnapshot& s) {
    if (!has_sve_state(layout, s)) return {};
    const unsigned vl = layout.sve_vl;
    std::vector<std::uint8_t> regset(sve_regset_bytes(vl), 0);
    const auto size = static_cast<std::uint32_t>(regset.size());
    const auto vl16 = static_cast<std::uint16_t>(vl);
    std::memcpy(regset.data(), &size, 4);
    std::memcpy(regset.data() + 8, &vl16, 2);
    std::memcpy(regset.data() + 12, &kSveModeFlag, 2);
    std::memcpy(regset.data() + kSveRegsetHeader, s.xstate.data() + kSveOffset + kSveHeaderBytes,
                sve_payload_bytes(vl));
    std::memcpy(regset.data() + sve_fpsr_offset(vl), s.xstate.data() + 32 * 16, 8); // fpsr, fpcr
    return regset;
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

Status read_all_regsets(const Layout& layout, pid_t tid, RegisterSnapshot& out) {
    if (auto r = read_general_regsets(tid, out); !r) return r;
    out.xstate.assign(layout.xstate_bytes, 0);
    if (auto r = get_regset(tid, NT_PRFPREG, out.xstate.data(), kFpsimdBytes,
                            "PTRACE_GETREGSET(NT_PRFPREG)");
        !r)
        return r;
    // Read-only extras; one the kernel refuses reads as zero.
    if (layout.pauth)
        (void)get_regset(tid, NT_ARM_PAC_MASK, out.xstate.data() + kPacMaskOffset, 16,
                         "PTRACE_GETREGSET(NT_ARM_PAC_MASK)");
    (void)get_regset(tid, NT_ARM_TLS, out.xstate.data() + kTlsOffset, 8,
                     "PTRACE_GETREGSET(NT_ARM_TLS)");
    if (layout.sve_vl != 0) {
        std::vector<std::uint8_t> regset(sve_regset_bytes(kMaxSveVl));
        iovec iov{regset.data(), regset.size()};
        if (ptrace(PTRACE_GETREGSET, tid, reinterpret_cast<void*>(NT_ARM_SVE), &iov) == 0)
            sve_from_regset(layout, {regset.data(), iov.iov_len}, out);
    }
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

Status write_all_regsets(const Layout& layout, pid_t tid, const RegisterSnapshot& in) {
    if (auto r = write_general_regsets(tid, in); !r) return r;
    if (in.xstate.size() < kFpsimdBytes) return ok_status();
    // A thread in SVE mode, or given SVE state, gets NT_ARM_SVE (NT_PRFPREG would zero z's upper
    // bits); one in FP/SIMD mode with nothing beyond v stays in that mode.
    if (has_sve_state(layout, in)) {
        std::uint16_t mode = 0;
        std::memcpy(&mode, in.xstate.data() + kSveOffset + 2, 2);
        const std::uint8_t* sve_regs = in.xstate.data() + kSveOffset + kSveHeaderBytes;
        bool beyond_v = mode == kSveModeFlag;
        for (std::size_t r = 0; r < 32 && !beyond_v; ++r) {
            const std::uint8_t* z = sve_regs + r * layout.sve_vl;
            beyond_v = std::memcmp(z, in.xstate.data() + r * 16, 16) != 0 ||
                       std::any_of(z + 16, z + layout.sve_vl, [](auto b) { return b != 0; });
        }
        const std::uint8_t* p = sve_regs + 32 * layout.sve_vl;
        beyond_v =
            beyond_v || std::any_of(p, p + 17 * (layout.sve_vl / 8), [](auto b) { return b != 0; });
        if (beyond_v) {
            const auto regset = sve_to_regset(layout, in);
            return set_regset(tid, NT_ARM_SVE, regset.data(), regset.size(),
                              "PTRACE_SETREGSET(NT_ARM_SVE)");
        }
    }
    return set_regset(tid, NT_PRFPREG, in.xstate.data(), kFpsimdBytes,
                      "PTRACE_SETREGSET(NT_PRFPREG)");
}

std::string target_xml(const Layout& layout) {
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
)";
    xml += layout.sve_vl ? sve_feature_xml(layout.sve_vl) : fpu_feature_xml();
    if (layout.pauth)
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
