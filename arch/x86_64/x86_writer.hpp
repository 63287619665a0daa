// An x86-64 instruction writer: the encodings that tpagent generates itself, for the
// agent-expression compiler (ax_jit.cpp) and the fast tracepoints' jump pads (jump_pad.cpp).
#pragma once
#include <cstdint>
#include <cstring>
#include <initializer_list>
#include <vector>

namespace tpagent::arch::x86_64::x86_writer {

enum Reg : std::uint8_t {
    RAX,
    RCX,
    RDX,
    RBX,
    RSP,
    RBP,
    RSI,
    RDI,
    R8,
    R9,
    R10,
    R11,
    R12,
    R13,
    R14,
    R15
};

// Condition codes (the low nibble of Jcc / SETcc / CMOVcc).
enum Cond : std::uint8_t { B = 0x2, AE = 0x3, E = 0x4, NE = 0x5, A = 0x7, L = 0xc };

// ALU group-1 operations: /digit of the 0x81 form; the r/m,reg opcode is digit*8+1.
enum Alu : std::uint8_t { ADD = 0, OR = 1, AND = 4, SUB = 5, XOR = 6, CMP = 7 };

// Shift group-2 operations (/digit of 0xC1 / 0xD3).
enum Shift : std::uint8_t { SHL = 4, SHR = 5, SAR = 7 };

// A memory operand [base + disp].
struct Mem {
    Reg base;
    std::int32_t disp;
};

class X86Writer {
  public:
    std::vector<std::uint8_t>& code() { return code_; }
    std::size_t pos() const { return code_.size(); }

    void byte(std::uint8_t b) { code_.push_back(b); }
    void u32(std::uint32_t v) {
        for (int i = 0; i < 4; ++i)
            byte(static_cast<std::uint8_t>(v >> (8 * i)));
    }
    void u64(std::uint64_t v) {
        for (int i = 0; i < 8; ++i)
            byte(static_cast<std::uint8_t>(v >> (8 * i)));
    }

    // REX prefix; emitted when any bit is set (or `force`, for byte registers sil/dil).
    void rex(bool w, unsigned reg, unsigned base, bool force = false) {
        const std::uint8_t r = 0x40 | (w ? 8 : 0) | ((reg & 8) ? 4 : 0) | ((base & 8) ? 1 : 0);
        if (r != 0x40 || force) byte(r);
    }
    void modrm_rr(unsigned reg, unsigned rm) { byte(0xc0 | ((reg & 7) << 3) | (rm & 7)); }
    void modrm_mem(unsigned reg, Mem m) {
        const bool d8 = m.disp >= -128 && m.disp <= 127;
        byte((d8 ? 0x40 : 0x80) | ((reg & 7) << 3) | (m.base & 7));
        if ((m.base & 7) == RSP) byte(0x24); // SIB: base only
        if (d8)
            byte(static_cast<std::uint8_t>(m.disp));
        else
            u32(static_cast<std::uint32_t>(m.disp));
    }

    // op r/m64, r64 (or 32-bit when !w)
    void rr(std::uint8_t op, Reg dst, Reg src, bool w = true) {
        rex(w, src, dst);
        byte(op);
        modrm_rr(src, dst);
    }
    void mov(Reg dst, Reg src) {
        if (dst != src) rr(0x89, dst, src);
    }
    void mov32(Reg dst, Reg src) { rr(0x89, dst, src, false); } // zero-extends
    void mov_imm(Reg dst, std::uint64_t v) {
        if (v == 0) {
            rr(0x31, dst, dst, false); // xor r32, r32
        } else if (v <= 0xffffffffu) {
            rex(false, 0, dst);
            byte(0xb8 + (dst & 7));
            u32(static_cast<std::uint32_t>(v));
        } else if (fits_i32(v)) {
            rex(true, 0, dst);
            byte(0xc7);
            modrm_rr(0, dst);
            u32(static_cast<std::uint32_t>(v));
        } else {
            rex(true, 0, dst);
            byte(0xb8 + (dst & 7));
            u64(v);
        }
    }
    void load(Reg dst, Mem m) { mem_op(0x8b, dst, m, true); }
    void store(Mem m, Reg src) { mem_op(0x89, src, m, true); }
    void store32(Mem m, Reg src) { mem_op(0x89, src, m, false); }
    void lea(Reg dst, Mem m) { mem_op(0x8d, dst, m, true); } // keeps the flags
    // op [m] with a ModRM extension (`ext`), then `imm_bytes` of imm.
    void op_mem_imm(bool w, std::uint8_t op, unsigned ext, Mem m, std::uint32_t imm,
                    unsigned imm_bytes) {
        rex(w, 0, m.base);
        byte(op);
        modrm_mem(ext, m);
        for (unsigned i = 0; i < imm_bytes; ++i)
            byte(static_cast<std::uint8_t>(imm >> (8 * i)));
    }
    // op with the operand fs:[disp32] (SIB, no base, no index); `reg` is the ModRM reg field,
    // a register or an opcode's extension.
    void fs_op(bool w, std::initializer_list<std::uint8_t> op, unsigned reg, std::int32_t disp) {
        byte(0x64);
        rex(w, reg, 0);
        for (std::uint8_t b : op)
            byte(b);
        byte(static_cast<std::uint8_t>(0x04 | ((reg & 7) << 3)));
        byte(0x25);
        u32(static_cast<std::uint32_t>(disp));
    }
    // The arithmetic flags into ax (lahf: SF ZF AF PF CF in ah; seto: OF in al), and back: OF
    // from al (0x7f + 1 overflows), the rest by sahf. Neither touches DF or the others.
    void flags_to_ax() { byte(0x9f), byte(0x0f), byte(0x90), byte(0xc0); }
    void flags_from_ax() { byte(0x04), byte(0x7f), byte(0x9e); }
    void store_imm32(Mem m, std::uint32_t v, bool w) { // mov r/m, imm32 (sign-extended if w)
        rex(w, 0, m.base);
        byte(0xc7);
        modrm_mem(0, m);
        u32(v);
    }
    // Zero-extending loads of 1, 2, 4, 8 bytes from [base] or m.
    void load_sized(Reg dst, Reg base, unsigned size) { load_sized(dst, Mem{base, 0}, size); }
    void load_sized(Reg dst, Mem m, unsigned size) {
        const Reg base = m.base;
        switch (size) {
        case 1:
            rex(false, dst, base), byte(0x0f), byte(0xb6), modrm_mem(dst, m);
            break;
        case 2:
            rex(false, dst, base), byte(0x0f), byte(0xb7), modrm_mem(dst, m);
            break;
        case 4:
            mem_op(0x8b, dst, m, false);
            break;
        default:
            mem_op(0x8b, dst, m, true);
            break;
        }
    }
    // Sign-extending loads of 1, 2, 4 bytes from [base] into a 64-bit register.
    void load_signed(Reg dst, Reg base, unsigned size) {
        const Mem m{base, 0};
        rex(true, dst, base);
        if (size == 4) {
            byte(0x63);
        } else {
            byte(0x0f), byte(size == 1 ? 0xbe : 0xbf);
        }
        modrm_mem(dst, m);
    }
    void test_imm(Reg r, std::int32_t v) { // test r64, imm32
        rex(true, 0, r), byte(0xf7), modrm_rr(0, r), u32(static_cast<std::uint32_t>(v));
    }
    void alu(Alu op, Reg dst, Reg src) { rr(static_cast<std::uint8_t>(op * 8 + 1), dst, src); }
    void alu_mem(Alu op, Reg dst, Mem m) {
        mem_op(static_cast<std::uint8_t>(op * 8 + 3), dst, m, true);
    }
    void alu_imm(Alu op, Reg dst, std::int32_t v, bool w = true) {
        rex(w, 0, dst);
        if (v >= -128 && v <= 127) {
            byte(0x83), modrm_rr(op, dst), byte(static_cast<std::uint8_t>(v));
        } else {
            byte(0x81), modrm_rr(op, dst), u32(static_cast<std::uint32_t>(v));
        }
    }
    void alu_mem_imm(Alu op, Mem m, std::int8_t v) { // op qword [m], imm8
        rex(true, 0, m.base);
        byte(0x83);
        modrm_mem(op, m);
        byte(static_cast<std::uint8_t>(v));
    }
    void imul(Reg dst, Reg src) { rex(true, dst, src), byte(0x0f), byte(0xaf), modrm_rr(dst, src); }
    void imul_imm(Reg dst, std::int32_t v) {
        rex(true, dst, dst), byte(0x69), modrm_rr(dst, dst), u32(static_cast<std::uint32_t>(v));
    }
    void shift_imm(Shift op, Reg dst, std::uint8_t n) {
        rex(true, 0, dst), byte(0xc1), modrm_rr(op, dst), byte(n);
    }
    void shift_cl(Shift op, Reg dst) { rex(true, 0, dst), byte(0xd3), modrm_rr(op, dst); }
    void unary(std::uint8_t digit, Reg r) { rex(true, 0, r), byte(0xf7), modrm_rr(digit, r); }
    void neg(Reg r) { unary(3, r); }
    void not_(Reg r) { unary(2, r); }
    void div(Reg r) { unary(6, r); }
    void idiv(Reg r) { unary(7, r); }
    void cqo() { byte(0x48), byte(0x99); }
    void test(Reg a, Reg b) { rr(0x85, a, b); }
    void setcc_movzx(Cond c, Reg r) { // r = flags(c) ? 1 : 0, r in rax..rbx
        byte(0x0f), byte(0x90 | c), modrm_rr(0, r);
        byte(0x0f), byte(0xb6), modrm_rr(r, r);
    }
    void cmov(Cond c, Reg dst, Reg src) {
        rex(true, dst, src), byte(0x0f), byte(0x40 | c), modrm_rr(dst, src);
    }
    void movsx(Reg r, unsigned bits) { // sign-extend the low 8/16/32 bits of r in place
        if (bits == 32) {
            rex(true, r, r), byte(0x63), modrm_rr(r, r);
        } else {
            rex(true, r, r), byte(0x0f), byte(bits == 8 ? 0xbe : 0xbf), modrm_rr(r, r);
        }
    }
    void movzx(Reg r, unsigned bits) { // zero-extend the low 8/16 bits of r in place
        rex(false, r, r, bits == 8 && r >= RSP), byte(0x0f), byte(bits == 8 ? 0xb6 : 0xb7);
        modrm_rr(r, r);
    }
    void push(Reg r) { rex(false, 0, r), byte(0x50 + (r & 7)); }
    void pop(Reg r) { rex(false, 0, r), byte(0x58 + (r & 7)); }
    void call(Reg r) { rex(false, 0, r), byte(0xff), modrm_rr(2, r); }
    void ret() { byte(0xc3); }

    // Jumps with a 32-bit displacement; returns where the displacement is, for patching.
    std::size_t jcc(Cond c) {
        byte(0x0f), byte(0x80 | c), u32(0);
        return pos() - 4;
    }
    std::size_t jmp() {
        byte(0xe9), u32(0);
        return pos() - 4;
    }
    void patch(std::size_t at, std::size_t target) {
        const auto rel = static_cast<std::int32_t>(static_cast<std::int64_t>(target) -
                                                   static_cast<std::int64_t>(at + 4));
        std::memcpy(&code_[at], &rel, 4);
    }

    static bool fits_i32(std::uint64_t v) {
        const auto s = static_cast<std::int64_t>(v);
        return s >= INT32_MIN && s <= INT32_MAX;
    }

  private:
    void mem_op(std::uint8_t op, Reg reg, Mem m, bool w) {
        rex(w, reg, m.base);
        byte(op);
        modrm_mem(reg, m);
    }

    std::vector<std::uint8_t> code_;
};

} // namespace tpagent::arch::x86_64::x86_writer
