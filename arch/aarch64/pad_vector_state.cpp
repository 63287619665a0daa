#include "arch/aarch64/pad_vector_state.hpp"
#include "arch/aarch64/encoding.hpp"
#include <algorithm>
#include <cstring>

namespace tpagent::arch::aarch64 {
namespace {

using namespace enc;

constexpr std::uint32_t kHeaderBytes = 16;
constexpr std::uint32_t kQBytes = 32 * 16;
constexpr std::uint32_t kBlockReg = 19, kVectorsReg = 20, kPredicatesReg = 21;

constexpr std::uint32_t addvl(unsigned d, unsigned n, int vls) {
    return 0x04205000 | n << 16 | (static_cast<std::uint32_t>(vls) & 0x3f) << 5 | d;
}
constexpr std::uint32_t rdvl(unsigned d) { // xd = the vector length in bytes
    return 0x04bf5020 | d;
}
// str/ldr zt|pt, [xn, #k, mul vl]
constexpr std::uint32_t sve_mem(std::uint32_t op, unsigned t, unsigned n, unsigned k) {
    return op | (k >> 3) << 16 | (k & 7) << 10 | n << 5 | t;
}
constexpr std::uint32_t kStrZ = 0xe5804000, kLdrZ = 0x85804000;
constexpr std::uint32_t kStrP = 0xe5800000, kLdrP = 0x85800000;
constexpr std::uint32_t kRdffrP0 = 0x2519f000, kWrffrP0 = 0x25289000;
constexpr std::uint32_t kStpQ = 0xad000000, kLdpQ = 0xad400000; // stp/ldp qa, qb, [xn, #off]
// q0..q31 by pairs, from the vectors' base on.
void q_pairs(Emitter& e, std::uint32_t op) {
    for (std::uint32_t r = 0; r < 32; r += 2)
        e.put(op | r << 15 | (r + 1) << 10 | kVectorsReg << 5 | r); // offset r * 16, scaled
}
constexpr std::uint32_t kMrsFpsrX9 = 0xd53b4429, kMrsFpcrX10 = 0xd53b440a;
constexpr std::uint32_t kMsrFpsrX9 = 0xd51b4429, kMsrFpcrX10 = 0xd51b440a;
constexpr std::uint32_t kMrsSvcrX10 = 0xd53b424a;
// stp/ldp w9, w10, [x20, #-16] and str/ldr w, [x20, #-8]: the header, before the vectors
constexpr std::uint32_t kStpHeader = 0x293e2a89, kLdpHeader = 0x297e2a89;
constexpr std::uint32_t str_vl(unsigned t) {
    return 0xb81f8280 | t; // stur wt, [x20, #-8]
}
constexpr std::uint32_t kLdrVlW9 = 0xb85f8289; // ldur w9, [x20, #-8]
constexpr std::uint32_t kTbnzW10Bit0 = 0x3700000a, kCbzW9 = 0x34000009, kBranch = 0x14000000;

void z_and_p(Emitter& e, std::uint32_t z_op, std::uint32_t p_op) {
    for (unsigned r = 0; r < 32; ++r)
        e.put(sve_mem(z_op, r, kVectorsReg, r));
    for (unsigned r = 0; r < 16; ++r)
        e.put(sve_mem(p_op, r, kPredicatesReg, r));
}

} // namespace

std::uint32_t vector_state_bytes(const Layout& layout) {
    if (layout.sve_vl == 0) return kHeaderBytes + kQBytes;
    return kHeaderBytes + 32 * layout.sve_vl + 17 * (layout.sve_vl / 8);
}

void emit_vector_state_save(Emitter& e, const PadVectorState& shape, std::uint32_t block_at) {
    e.put(add_imm(kBlockReg, kSp, block_at));
    if (shape.sve) {
        // 35 vector lengths hold z (32) and p, ffr (17 eighths); 32 bytes the header and the
        // frame's first 16 (the return address slot).
        e.put(addvl(kSp, kSp, -32));
        e.put(addvl(kSp, kSp, -3));
        e.put(sub_imm(kSp, kSp, 32));
    } else {
        e.put(sub_imm(kSp, kSp, 16 + kHeaderBytes + kQBytes));
    }
    e.put(add_imm(kVectorsReg, kSp, 16 + kHeaderBytes));
    e.put(kMrsFpsrX9);
    e.put(kMrsFpcrX10);
    e.put(kStpHeader);
    if (!shape.sve) {
        q_pairs(e, kStpQ);
        return;
    }
    std::size_t streaming = 0;
    if (shape.sme) {
        e.put(kMrsSvcrX10);
        streaming = e.size();
        e.put(kTbnzW10Bit0);
    }
    e.put(rdvl(9));
    e.put(str_vl(9));
    e.put(addvl(kPredicatesReg, kVectorsReg, 16));
    e.put(addvl(kPredicatesReg, kPredicatesReg, 16));
    z_and_p(e, kStrZ, kStrP);
    e.put(kRdffrP0); // p0 is saved: it carries ffr
    e.put(sve_mem(kStrP, 0, kPredicatesReg, 16));
    if (shape.sme) {
        const std::size_t done = e.size();
        e.put(kBranch);
        e.link(streaming, e.size());
        e.put(str_vl(31)); // wzr: nothing of SVE saved
        e.link(done, e.size());
    }
}

void emit_vector_state_restore(Emitter& e, const PadVectorState& shape, std::uint32_t block_at) {
    e.put(kLdpHeader);
    e.put(kMsrFpsrX9);
    e.put(kMsrFpcrX10);
    if (!shape.sve) {
        q_pairs(e, kLdpQ);
    } else {
        e.put(kLdrVlW9);
        const std::size_t none = e.size();
        e.put(kCbzW9);
        e.put(sve_mem(kLdrP, 0, kPredicatesReg, 16));
        e.put(kWrffrP0);
        z_and_p(e, kLdrZ, kLdrP);
        e.link(none, e.size());
    }
    e.put(sub_imm(kSp, kBlockReg, block_at));
}

void vector_state_to_g(const Layout& layout, std::span<const std::uint8_t> state,
                       std::span<std::uint8_t> g, std::vector<bool>& placed) {
    placed.assign(layout.regs.size(), false);
    if (state.size() < vector_state_bytes(layout)) return;
    auto put = [&](std::size_t regnum, const std::uint8_t* from) {
        const RegisterDesc& r = layout.regs[regnum];
        if (r.g_offset + r.size > g.size()) return;
        std::copy_n(from, r.size, g.begin() + r.g_offset);
        placed[regnum] = true;
    };
    put(kFpsrRegnum, state.data());
    put(kFpcrRegnum, state.data() + 4);
    const std::uint8_t* vectors = state.data() + kHeaderBytes;
    if (layout.sve_vl == 0) {
        for (std::size_t r = 0; r < 32; ++r)
            put(kFirstVRegnum + r, vectors + r * 16);
        return;
    }
    // The length the pad found (program memory: checked), 0 where it saved no SVE register.
    std::uint32_t vl = 0;
    std::memcpy(&vl, state.data() + 8, 4);
    if (vl != layout.sve_vl) return;
    for (std::size_t r = 0; r < 32; ++r)
        put(kFirstVRegnum + r, vectors + r * vl);
    for (std::size_t r = 0; r < 17; ++r)
        put(kFirstPRegnum + r, vectors + 32 * vl + r * (vl / 8));
    const std::uint64_t vg = vl / 8;
    put(kFirstPRegnum + 17, reinterpret_cast<const std::uint8_t*>(&vg));
}

std::vector<bool> vector_state_registers(const Layout& layout) {
    std::vector<bool> held(layout.regs.size(), false);
    held[kFpsrRegnum] = held[kFpcrRegnum] = true;
    for (std::size_t r = 0; r < 32; ++r)
        held[kFirstVRegnum + r] = true;
    if (layout.sve_vl)
        for (std::size_t r = 0; r < 18; ++r) // p0..p15, ffr, vg
            held[kFirstPRegnum + r] = true;
    return held;
}

} // namespace tpagent::arch::aarch64
