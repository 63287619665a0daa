#include "arch/x86_64/registers.hpp"
#include "arch/x86_64/x87_tag.hpp"
#include <algorithm>
#include <cstddef>
#include <cstring>
#include <string_view>
#include <sys/user.h>

namespace tpagent::arch::x86_64 {
namespace {

constexpr std::size_t kGprSize = sizeof(user_regs_struct);

RegisterPlace gpr(std::size_t offset, std::uint32_t width = 8) {
    return {RegisterSource::Gpr, static_cast<std::uint32_t>(offset), width, kX87};
}
RegisterPlace fx(std::uint32_t offset, std::uint32_t width, XComponent c = kX87) {
    return {RegisterSource::Fxsave, offset, width, c};
}
RegisterPlace xs(std::uint32_t offset, std::uint32_t width, XComponent c) {
    return {RegisterSource::Xstate, offset, width, c};
}

template <typename T> T load(const std::uint8_t* p) {
    T v;
    std::memcpy(&v, p, sizeof v);
    return v;
}

// Components the kernel says this snapshot's XSAVE area covers (all, when it does not say).
std::uint64_t snapshot_components(const RegisterSnapshot& s) {
    if (s.xstate.size() < fxsave::kSize) return 0;
    const std::uint64_t legacy = (1u << kX87) | (1u << kSse);
    if (s.xstate.size() < kXsaveHeaderEnd) return legacy;
    if (load<std::uint32_t>(s.xstate.data() + kSwBytesOffset) != kSwMagic1) return ~0ull;
    return load<std::uint64_t>(s.xstate.data() + kSwBytesOffset + 8) | legacy;
}

} // namespace

RegisterLayout::RegisterLayout(const CpuFeatures& cpu) : cpu_(cpu) {
    add_feature("org.gnu.gdb.i386.core");
    static constexpr struct {
        const char* name;
        std::size_t offset;
        const char* type;
    } kGprs[] = {
        {"rax", offsetof(user_regs_struct, rax), "int64"},
        {"rbx", offsetof(user_regs_struct, rbx), "int64"},
        {"rcx", offsetof(user_regs_struct, rcx), "int64"},
        {"rdx", offsetof(user_regs_struct, rdx), "int64"},
        {"rsi", offsetof(user_regs_struct, rsi), "int64"},
        {"rdi", offsetof(user_regs_struct, rdi), "int64"},
        {"rbp", offsetof(user_regs_struct, rbp), "data_ptr"},
        {"rsp", offsetof(user_regs_struct, rsp), "data_ptr"},
        {"r8", offsetof(user_regs_struct, r8), "int64"},
        {"r9", offsetof(user_regs_struct, r9), "int64"},
        {"r10", offsetof(user_regs_struct, r10), "int64"},
        {"r11", offsetof(user_regs_struct, r11), "int64"},
        {"r12", offsetof(user_regs_struct, r12), "int64"},
        {"r13", offsetof(user_regs_struct, r13), "int64"},
        {"r14", offsetof(user_regs_struct, r14), "int64"},
        {"r15", offsetof(user_regs_struct, r15), "int64"},
        {"rip", offsetof(user_regs_struct, rip), "code_ptr"},
    };
    for (const auto& r : kGprs)
        add(r.name, 8, gpr(r.offset), r.type);
    add("eflags", 4, gpr(offsetof(user_regs_struct, eflags), 4), "i386_eflags");
    add("cs", 4, gpr(offsetof(user_regs_struct, cs), 4), "int32");
    add("ss", 4, gpr(offsetof(user_regs_struct, ss), 4), "int32");
    add("ds", 4, gpr(offsetof(user_regs_struct, ds), 4), "int32");
    add("es", 4, gpr(offsetof(user_regs_struct, es), 4), "int32");
    add("fs", 4, gpr(offsetof(user_regs_struct, fs), 4), "int32");
    add("gs", 4, gpr(offsetof(user_regs_struct, gs), 4), "int32");
    for (int i = 0; i < 8; ++i)
        add(numbered("st", i), 10, fx(fxsave::kSt0 + i * fxsave::kStSlot, 10), "i387_ext");
    add("fctrl", 4, fx(fxsave::kFcw, 2), "int", "float");
    add("fstat", 4, fx(fxsave::kFsw, 2), "int", "float");
    add("ftag", 4, {RegisterSource::X87Tag, fxsave::kFtw, 1, kX87}, "int", "float");
    // gdb's fiseg/foseg are the 16-bit selectors, fioff/fooff the low 32 bits of the pointers.
    add("fiseg", 4, fx(fxsave::kFcs, 2), "int", "float");
    add("fioff", 4, fx(fxsave::kFip, 4), "int", "float");
    add("foseg", 4, fx(fxsave::kFds, 2), "int", "float");
    add("fooff", 4, fx(fxsave::kFdp, 4), "int", "float");
    add("fop", 4, {RegisterSource::Fop, fxsave::kFop, 2, kX87}, "int", "float");

    add_feature("org.gnu.gdb.i386.sse");
    for (int i = 0; i < 16; ++i)
        add(numbered("xmm", i), 16, fx(fxsave::kXmm0 + i * 16, 16, kSse), "vec128");
    add("mxcsr", 4, fx(fxsave::kMxcsr, 4, kSse), "i386_mxcsr", "vector");

    add_feature("org.gnu.gdb.i386.linux");
    add("orig_rax", 8, gpr(offsetof(user_regs_struct, orig_rax)), "int");

    add_feature("org.gnu.gdb.i386.segments");
    add("fs_base", 8, gpr(offsetof(user_regs_struct, fs_base)), "int");
    add("gs_base", 8, gpr(offsetof(user_regs_struct, gs_base)), "int");

    const auto& off = cpu_.offsets;
    if (cpu_.has(kAvx)) {
        add_feature("org.gnu.gdb.i386.avx");
        for (int i = 0; i < 16; ++i)
            add(numbered("ymm", i, "h"), 16, xs(off[kAvx] + i * 16, 16, kAvx), "uint128");
    }
    if (cpu_.has(kBndregs) && cpu_.has(kBndcsr)) {
        add_feature("org.gnu.gdb.i386.mpx");
        for (int i = 0; i < 4; ++i)
            add(numbered("bnd", i, "raw"), 16, xs(off[kBndregs] + i * 16, 16, kBndregs), "br128");
        add("bndcfgu", 8, xs(off[kBndcsr], 8, kBndcsr), "cfgu");
        add("bndstatus", 8, xs(off[kBndcsr] + 8, 8, kBndcsr), "status");
    }
    if (cpu_.has(kAvx) && cpu_.has(kOpmask) && cpu_.has(kZmmHi256) && cpu_.has(kHi16Zmm)) {
        add_feature("org.gnu.gdb.i386.avx512");
        // zmm16-31 are stored whole (64 bytes each); gdb splits them into xmm, ymm-high and
        // zmm-high parts like the lower sixteen.
        for (int i = 16; i < 32; ++i)
            add(numbered("xmm", i), 16, xs(off[kHi16Zmm] + (i - 16) * 64, 16, kHi16Zmm), "vec128");
        for (int i = 16; i < 32; ++i)
            add(numbered("ymm", i, "h"), 16, xs(off[kHi16Zmm] + (i - 16) * 64 + 16, 16, kHi16Zmm),
                "uint128");
        for (int i = 0; i < 8; ++i)
            add(numbered("k", i), 8, xs(off[kOpmask] + i * 8, 8, kOpmask), "uint64");
        for (int i = 0; i < 16; ++i)
            add(numbered("zmm", i, "h"), 32, xs(off[kZmmHi256] + i * 32, 32, kZmmHi256), "v2ui128");
        for (int i = 16; i < 32; ++i)
            add(numbered("zmm", i, "h"), 32, xs(off[kHi16Zmm] + (i - 16) * 64 + 32, 32, kHi16Zmm),
                "v2ui128");
    }
    if (cpu_.has(kPkru)) {
        add_feature("org.gnu.gdb.i386.pkeys");
        add("pkru", 4, xs(off[kPkru], 4, kPkru), "uint32");
    }
}

void RegisterLayout::add_feature(const char* name) {
    features_.push_back({name, static_cast<int>(descs_.size()), 0});
}

void RegisterLayout::add(const char* name, std::uint32_t size, RegisterPlace place,
                         const char* type, const char* group) {
    descs_.push_back({name, size, static_cast<std::uint32_t>(g_size_)});
    places_.push_back(place);
    types_.push_back({type, group});
    features_.back().count++;
    g_size_ += size;
}

const char* RegisterLayout::numbered(std::string_view prefix, int i, std::string_view suffix) {
    names_.push_back(std::string(prefix) + std::to_string(i) + std::string(suffix));
    return names_.back().c_str();
}

int RegisterLayout::find(std::string_view name) const {
    for (std::size_t i = 0; i < descs_.size(); ++i)
        if (name == descs_[i].name) return static_cast<int>(i);
    return -1;
}

void RegisterLayout::snapshot_to_g(const RegisterSnapshot& s, std::span<std::uint8_t> g,
                                   std::vector<bool>& available) const {
    available.assign(descs_.size(), false);
    const bool has_gpr = s.gpr.size() >= kGprSize;
    const bool has_legacy = s.xstate.size() >= fxsave::kSize;
    const bool has_header = s.xstate.size() >= kXsaveHeaderEnd;
    const std::uint64_t covered = snapshot_components(s);
    const std::uint64_t live =
        has_header ? load<std::uint64_t>(s.xstate.data() + kXstateBvOffset) : ~0ull;

    for (std::size_t i = 0; i < descs_.size(); ++i) {
        const RegisterDesc& d = descs_[i];
        const RegisterPlace& p = places_[i];
        if (d.g_offset + d.size > g.size()) continue;
        std::uint8_t* out = g.data() + d.g_offset;
        std::memset(out, 0, d.size);
        switch (p.source) {
        case RegisterSource::Gpr:
            if (!has_gpr) continue;
            std::memcpy(out, s.gpr.data() + p.offset, p.width);
            break;
        case RegisterSource::Fxsave:
            if (!has_legacy) continue;
            std::memcpy(out, s.xstate.data() + p.offset, p.width);
            break;
        case RegisterSource::X87Tag: {
            if (!has_legacy) continue;
            const std::uint16_t tag = full_x87_tag(std::span(s.xstate).first(fxsave::kSize));
            std::memcpy(out, &tag, sizeof tag);
            break;
        }
        case RegisterSource::Fop: {
            if (!has_legacy) continue;
            const std::uint16_t fop = load<std::uint16_t>(s.xstate.data() + p.offset) & 0x7ff;
            std::memcpy(out, &fop, sizeof fop);
            break;
        }
        case RegisterSource::Xstate:
            if (!has_header || !((covered >> p.component) & 1) ||
                p.offset + p.width > s.xstate.size())
                continue;
            // A component in its init state may hold stale bytes; its value is zero.
            if ((live >> p.component) & 1) std::memcpy(out, s.xstate.data() + p.offset, p.width);
            break;
        }
        available[i] = true;
    }
}

void RegisterLayout::g_to_snapshot(std::span<const std::uint8_t> g, RegisterSnapshot& s) const {
    if (s.gpr.size() < kGprSize) s.gpr.resize(kGprSize, 0);
    if (s.xstate.size() < fxsave::kSize) s.xstate.resize(fxsave::kSize, 0);
    const bool has_header = s.xstate.size() >= kXsaveHeaderEnd;
    std::uint64_t live = has_header ? load<std::uint64_t>(s.xstate.data() + kXstateBvOffset) : 0;

    for (std::size_t i = 0; i < descs_.size(); ++i) {
        const RegisterDesc& d = descs_[i];
        const RegisterPlace& p = places_[i];
        if (d.g_offset + d.size > g.size()) continue;
        const std::uint8_t* in = g.data() + d.g_offset;
        switch (p.source) {
        case RegisterSource::Gpr:
            std::memcpy(s.gpr.data() + p.offset, in, p.width);
            break;
        case RegisterSource::Fxsave:
            std::memcpy(s.xstate.data() + p.offset, in, p.width);
            live |= 1u << p.component;
            break;
        case RegisterSource::X87Tag:
            s.xstate[p.offset] = abridged_x87_tag(load<std::uint16_t>(in));
            live |= 1u << kX87;
            break;
        case RegisterSource::Fop: {
            const std::uint16_t fop = load<std::uint16_t>(in) & 0x7ff;
            std::memcpy(s.xstate.data() + p.offset, &fop, sizeof fop);
            live |= 1u << kX87;
            break;
        }
        case RegisterSource::Xstate: {
            if (!has_header || p.offset + p.width > s.xstate.size()) break;
            std::uint8_t* dst = s.xstate.data() + p.offset;
            // The kernel resets components whose XSTATE_BV bit is clear, so a new non-zero
            // value must mark its component live; zeros in an init component change nothing.
            const bool nonzero = std::any_of(in, in + p.width, [](std::uint8_t b) { return b; });
            if ((live >> p.component) & 1) {
                std::memcpy(dst, in, p.width);
            } else if (nonzero) {
                // Bytes of other registers in this component are stale: make them zero first.
                const std::uint32_t start = cpu_.offsets[p.component];
                const std::uint32_t size = kComponentSizes[p.component];
                if (start + size <= s.xstate.size()) std::memset(s.xstate.data() + start, 0, size);
                std::memcpy(dst, in, p.width);
                live |= 1ull << p.component;
            }
            break;
        }
        }
    }
    if (has_header) std::memcpy(s.xstate.data() + kXstateBvOffset, &live, sizeof live);
}

} // namespace tpagent::arch::x86_64
