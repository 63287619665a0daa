// Generates valid agent expressions from a stream of choices: a seeded PRNG in unit tests,
// the fuzzer's input in fuzz_ax_differential. Programs use every integer opcode, forward and
// backward jumps, registers, variables, collection and printf, over a small memory image.
#pragma once
#include "bytecode/opcodes.hpp"
#include <cstdint>
#include <random>
#include <vector>

namespace tpagent::bytecode::testing {

inline constexpr std::uint64_t kRandomMemoryBase = 0x10000;
inline constexpr unsigned kRandomMemorySize = 256;

// Chooser: unsigned pick(unsigned n) in [0, n); std::uint64_t value().
// The unit tests' Chooser: a seeded PRNG.
struct PrngChooser {
    std::mt19937_64 rng;
    unsigned pick(unsigned n) { return static_cast<unsigned>(rng() % n); }
    std::uint64_t value() { return rng(); }
};

// Generates programs from `Chooser` choices (see above).
template <typename Chooser> class RandomProgram {
  public:
    explicit RandomProgram(Chooser& c) : c_(c) {}

    std::vector<std::uint8_t> make() {
        out_.clear();
        const bool loop = c_.pick(16) == 0;
        if (loop) { // [0] cond; if_goto 0; value; end: runs until cond is 0 or the budget ends
            expr(3);
            jump(Op::IfGoto, 0);
        }
        const unsigned statements = c_.pick(3);
        for (unsigned i = 0; i < statements; ++i)
            statement();
        expr(5);
        op(Op::End);
        return out_;
    }

  private:
    void op(Op o) { out_.push_back(static_cast<std::uint8_t>(o)); }
    void be(std::uint64_t v, unsigned n) {
        for (unsigned i = n; i-- > 0;)
            out_.push_back(static_cast<std::uint8_t>(v >> (8 * i)));
    }
    void constant(std::uint64_t v) {
        static constexpr Op kinds[] = {Op::Const8, Op::Const16, Op::Const32, Op::Const64};
        const unsigned k = c_.pick(4);
        op(kinds[k]);
        be(v, 1u << k);
    }
    std::size_t jump(Op o, std::size_t to) {
        op(o);
        be(to, 2);
        return out_.size() - 2;
    }
    void patch(std::size_t at, std::size_t to) {
        out_[at] = static_cast<std::uint8_t>(to >> 8);
        out_[at + 1] = static_cast<std::uint8_t>(to);
    }
    std::uint64_t interesting() {
        static constexpr std::uint64_t values[] = {0,
                                                   1,
                                                   2,
                                                   3,
                                                   7,
                                                   8,
                                                   31,
                                                   32,
                                                   63,
                                                   64,
                                                   65,
                                                   255,
                                                   0x7fffffff,
                                                   0x80000000,
                                                   0xffffffff,
                                                   0x7fffffffffffffff,
                                                   0x8000000000000000,
                                                   0xffffffffffffffff,
                                                   0xfffffffffffffffe};
        if (c_.pick(2)) return values[c_.pick(sizeof values / sizeof values[0])];
        return c_.value();
    }
    // An address: mostly inside the image, sometimes just past it or wild. A computed one holds
    // an expression of less than `depth`, so that an address within an address within... ends
    // (unbounded, the fuzzer's choices once made the stack deeper than the validator allows).
    void address(unsigned depth) {
        const unsigned kind = c_.pick(8);
        switch (kind == 2 && depth == 0 ? 3 : kind) {
        case 0:
            constant(c_.pick(4) ? kRandomMemoryBase + c_.pick(8) : c_.value());
            break;
        case 1:
            constant(kRandomMemoryBase + kRandomMemorySize - 1 - c_.pick(4));
            break;
        case 2: // computed: base + (e & 0x7f)
            constant(kRandomMemoryBase);
            expr(depth - 1);
            constant(0x7f);
            op(Op::BitAnd);
            op(Op::Add);
            break;
        default:
            constant(kRandomMemoryBase + c_.pick(kRandomMemorySize - 8));
            break;
        }
    }

    // Mostly one of the three variables that exist.
    unsigned variable() { return c_.pick(16) ? c_.pick(3) : 3; }

    // Pushes exactly one value.
    void expr(unsigned depth) {
        const unsigned choice = depth == 0 ? c_.pick(4) : c_.pick(18);
        switch (choice) {
        case 0:
            constant(interesting());
            break;
        case 1: {
            static constexpr Op refs[] = {Op::Ref8, Op::Ref16, Op::Ref32, Op::Ref64};
            address(depth);
            op(refs[c_.pick(4)]);
            break;
        }
        case 2:
            op(Op::Reg), be(c_.pick(16) ? c_.pick(10) : 12, 2);
            break;
        case 3:
            op(Op::Getv), be(variable(), 2);
            break;
        case 4:
        case 5:
        case 6:
        case 7: {
            static constexpr Op bin[] = {
                Op::Add,         Op::Sub,         Op::Mul,         Op::DivSigned,
                Op::DivUnsigned, Op::RemSigned,   Op::RemUnsigned, Op::Lsh,
                Op::RshSigned,   Op::RshUnsigned, Op::BitAnd,      Op::BitOr,
                Op::BitXor,      Op::Equal,       Op::LessSigned,  Op::LessUnsigned};
            expr(depth - 1);
            expr(depth - 1);
            op(bin[c_.pick(sizeof bin / sizeof bin[0])]);
            break;
        }
        case 8: {
            static constexpr Op un[] = {Op::LogNot, Op::BitNot, Op::Ext, Op::ZeroExt};
            expr(depth - 1);
            const Op o = un[c_.pick(4)];
            op(o);
            if (o == Op::Ext || o == Op::ZeroExt) {
                static constexpr std::uint8_t bits[] = {0, 1, 5, 8, 16, 31, 32, 33, 63, 64, 100};
                out_.push_back(bits[c_.pick(sizeof bits)]);
            }
            break;
        }
        case 9: { // cond ? a : b
            expr(depth - 1);
            const std::size_t to_then = jump(Op::IfGoto, 0);
            expr(depth - 1);
            const std::size_t to_end = jump(Op::Goto, 0);
            patch(to_then, out_.size());
            expr(depth - 1);
            patch(to_end, out_.size());
            break;
        }
        case 10:
            expr(depth - 1), expr(depth - 1), op(Op::Swap), op(Op::Sub);
            break;
        case 11:
            expr(depth - 1), op(Op::Dup), op(Op::Mul);
            break;
        case 12:
            expr(depth - 1), expr(depth - 1), expr(depth - 1);
            op(Op::Rot), op(Op::Sub), op(Op::BitXor);
            break;
        case 13: {
            const unsigned n = c_.pick(3);
            for (unsigned i = 0; i <= n; ++i)
                expr(depth - 1);
            op(Op::Pick), out_.push_back(static_cast<std::uint8_t>(c_.pick(n + 1)));
            for (unsigned i = 0; i <= n; ++i)
                op(Op::Add);
            break;
        }
        case 14:
            expr(depth - 1), op(Op::Setv), be(variable(), 2);
            break;
        case 15:
            address(depth - 1);
            if (c_.pick(2))
                op(Op::TraceQuick), be(c_.pick(40), 1);
            else
                op(Op::Trace16), be(c_.pick(300), 2);
            break;
        case 16:
            op(Op::Tracev), be(variable(), 2);
            break;
        default:
            expr(depth - 1), expr(depth - 1), op(Op::Pop);
            break;
        }
    }

    // Leaves the stack as it found it.
    void statement() {
        switch (c_.pick(4)) {
        case 0:
            address(2), constant(c_.pick(64)), op(c_.pick(2) ? Op::Trace : Op::Tracenz);
            break;
        case 1: {
            // printf("%d %x|%s", a, b, s)
            constant(kRandomMemoryBase + c_.pick(kRandomMemorySize));
            expr(2);
            expr(2);
            constant(0), constant(0);
            static const char format[] = "v=%lld %hx|%.10s\\n";
            op(Op::Printf);
            out_.push_back(3);
            be(sizeof format, 2);
            for (char ch : format)
                out_.push_back(static_cast<std::uint8_t>(ch));
            break;
        }
        default:
            expr(3), op(Op::Pop);
            break;
        }
    }

    Chooser& c_;
    std::vector<std::uint8_t> out_;
};

} // namespace tpagent::bytecode::testing
