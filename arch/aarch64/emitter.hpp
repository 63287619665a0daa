// Pad code for AArch64, one 4-byte instruction at a time (the relocator's and the jump pad's).
#pragma once
#include "arch/aarch64/encoding.hpp"
#include "arch/aarch64/relocator.hpp"
#include "base/result.hpp"
#include <cstdint>
#include <cstring>
#include <vector>

namespace tpagent::arch::aarch64 {

class Emitter {
  public:
    explicit Emitter(std::uint64_t at) : at_(at) {}
    std::uint64_t pc() const { return at_ + bytes_.size(); }
    std::size_t size() const { return bytes_.size(); }
    void put(std::uint32_t insn) {
        std::uint8_t b[4];
        std::memcpy(b, &insn, 4); // little-endian, as the program runs
        bytes_.insert(bytes_.end(), b, b + 4);
    }
    // Overwrites the instruction at byte offset `at` (a forward reference, once known).
    void patch(std::size_t at, std::uint32_t insn) { std::memcpy(bytes_.data() + at, &insn, 4); }
    // Sets bits of the instruction at `at` (an offset field left 0 when it was put).
    void patch_or(std::size_t at, std::uint32_t bits) {
        std::uint32_t insn = 0;
        std::memcpy(&insn, bytes_.data() + at, 4);
        patch(at, insn | bits);
    }
    // Points the branch at byte offset `at` (put with its offset 0) to byte offset `to`.
    void link(std::size_t at, std::size_t to) {
        std::uint32_t insn = 0;
        std::memcpy(&insn, bytes_.data() + at, 4);
        patch(at, insn | enc::branch_offset_bits(insn, at, to));
    }
    // Xd = value: MOVZ then MOVK for each further non-zero half-word.
    void move_wide(unsigned rd, std::uint64_t value) {
        put(0xd2800000 | static_cast<std::uint32_t>(value & 0xffff) << 5 | rd);
        for (unsigned hw = 1; hw < 4; ++hw) {
            const auto half = static_cast<std::uint32_t>((value >> (16 * hw)) & 0xffff);
            if (half) put(0xf2800000 | hw << 21 | half << 5 | rd);
        }
    }
    Status branch(std::uint64_t target) {
        auto b = encode_branch(pc(), target);
        if (!b) return b.error();
        put(*b);
        return ok_status();
    }
    std::vector<std::uint8_t> take() { return std::move(bytes_); }

  private:
    std::uint64_t at_;
    std::vector<std::uint8_t> bytes_;
};

} // namespace tpagent::arch::aarch64
