#include "arch/x86_64/debug_registers.hpp"
#include "base/system_error.hpp"
#include <cerrno>
#include <cstddef>
#include <cstring>
#include <fmt/format.h>
#include <sys/ptrace.h>
#include <sys/user.h>
#include <vector>

namespace tpagent::arch::x86_64 {
namespace {

// DR7 layout (Intel SDM vol. 3, 17.2.4): Ln enable bits at 2n, and per slot a 4-bit field
// at 16 + 4n holding R/Wn (00 execute, 01 write, 11 read or write) and LENn.
constexpr unsigned kRwExecute = 0b00;
constexpr unsigned kRwWrite = 0b01;
constexpr unsigned kRwAccess = 0b11;
constexpr std::uint64_t kDr6SlotBits = 0xf; // B0-B3

// LEN encoding: 1 byte 00, 2 bytes 01, 8 bytes 10, 4 bytes 11.
unsigned len_bits(std::uint8_t len) {
    switch (len) {
    case 1:
        return 0b00;
    case 2:
        return 0b01;
    case 8:
        return 0b10;
    default:
        return 0b11;
    }
}

std::size_t debugreg_offset(int i) {
    return offsetof(struct user, u_debugreg) + i * 8;
}

struct Piece {
    std::uint64_t addr;
    std::uint8_t len;
};

// Splits a range into the largest naturally aligned pieces the hardware can watch.
std::vector<Piece> split_range(std::uint64_t addr, std::uint64_t len) {
    std::vector<Piece> pieces;
    while (len > 0) {
        std::uint8_t size = 8;
        while (size > 1 && (addr % size != 0 || size > len))
            size /= 2;
        pieces.push_back({addr, size});
        addr += size;
        len -= size;
    }
    return pieces;
}

// Whether [addr, addr+len) is a range the four slots could ever cover.
bool watchable(std::uint64_t addr, std::uint64_t len) {
    return len != 0 && len <= 32 && addr + len >= addr;
}

HwBreakKind hw_kind(WatchKind kind) {
    return kind == WatchKind::Write ? HwBreakKind::Write : HwBreakKind::Access;
}

} // namespace

Status DebugRegisters::insert_watchpoint(WatchKind kind, std::uint64_t addr, std::uint64_t len) {
    if (kind == WatchKind::Read)
        return make_error(ErrorCode::Unsupported,
                          "x86 debug registers cannot watch reads only; use an access watchpoint");
    return insert(hw_kind(kind), addr, len);
}

Status DebugRegisters::remove_watchpoint(WatchKind kind, std::uint64_t addr, std::uint64_t len) {
    if (kind == WatchKind::Read)
        return make_error(ErrorCode::Unsupported, "no read watchpoints on x86");
    return remove(hw_kind(kind), addr, len);
}

Status DebugRegisters::insert_breakpoint(std::uint64_t addr) {
    return insert(HwBreakKind::Execute, addr, 1);
}

Status DebugRegisters::remove_breakpoint(std::uint64_t addr) {
    return remove(HwBreakKind::Execute, addr, 1);
}

DebugRegisters::Slot* DebugRegisters::find(std::array<Slot, kSlots>& plan, HwBreakKind kind,
                                           std::uint64_t addr, std::uint8_t len) {
    for (Slot& s : plan)
        if (s.refs > 0 && s.kind == kind && s.addr == addr && s.len == len) return &s;
    return nullptr;
}

Status DebugRegisters::insert(HwBreakKind kind, std::uint64_t addr, std::uint64_t len) {
    if (!watchable(addr, len))
        return make_error(ErrorCode::BadPacket,
                          fmt::format("hardware watch length {} at {:#x} not possible", len, addr));
    // Plan on a copy so that a failure changes nothing.
    std::array<Slot, kSlots> plan = slots_;
    for (const Piece& piece : split_range(addr, len)) {
        Slot* target = find(plan, kind, piece.addr, piece.len);
        for (Slot& s : plan) {
            if (target) break;
            if (s.refs == 0) target = &s;
        }
        // An error, not "unsupported" (the empty reply): gdb, having had other Z2s accepted,
        // takes an empty reply for a protocol error ("conflicting enabled responses").
        if (!target)
            return make_error(ErrorCode::TooLarge,
                              fmt::format("no free debug register for {} bytes at {:#x} "
                                          "(4 slots of at most 8 aligned bytes)",
                                          len, addr));
        if (target->refs == 0) *target = Slot{piece.addr, piece.len, kind, 0};
        target->refs++;
    }
    slots_ = plan;
    return ok_status();
}

Status DebugRegisters::remove(HwBreakKind kind, std::uint64_t addr, std::uint64_t len) {
    if (!watchable(addr, len)) return make_error(ErrorCode::BadPacket, "bad hardware watch range");
    std::array<Slot, kSlots> plan = slots_;
    for (const Piece& piece : split_range(addr, len)) {
        Slot* found = find(plan, kind, piece.addr, piece.len);
        if (!found)
            return make_error(ErrorCode::NotFound,
                              fmt::format("no hardware watch of {} bytes at {:#x}", len, addr));
        if (--found->refs == 0) *found = Slot{};
    }
    slots_ = plan;
    return ok_status();
}

bool DebugRegisters::empty() const {
    for (const Slot& s : slots_)
        if (s.refs > 0) return false;
    return true;
}

std::uint64_t DebugRegisters::dr7() const {
    std::uint64_t dr7 = 0;
    for (int i = 0; i < kSlots; ++i) {
        const Slot& s = slots_[i];
        if (s.refs == 0) continue;
        const unsigned rw = s.kind == HwBreakKind::Execute ? kRwExecute
                            : s.kind == HwBreakKind::Write ? kRwWrite
                                                           : kRwAccess;
        // Execute breakpoints must use LEN 00 whatever their length.
        const unsigned len = s.kind == HwBreakKind::Execute ? 0 : len_bits(s.len);
        dr7 |= 1ull << (2 * i); // local enable; Linux switches DRs per task anyway
        dr7 |= static_cast<std::uint64_t>(rw | (len << 2)) << (16 + 4 * i);
    }
    return dr7;
}

Status DebugRegisters::apply(pid_t tid) const {
    // Disable first: the kernel checks each address and DR7 against each other as they arrive.
    if (ptrace(PTRACE_POKEUSER, tid, debugreg_offset(7), nullptr) != 0)
        return ptrace_error("PTRACE_POKEUSER(DR7)", tid, errno);
    for (int i = 0; i < kSlots; ++i) {
        const auto value = static_cast<std::uintptr_t>(slots_[i].refs > 0 ? slots_[i].addr : 0);
        if (ptrace(PTRACE_POKEUSER, tid, debugreg_offset(i), reinterpret_cast<void*>(value)) != 0)
            return ptrace_error("PTRACE_POKEUSER(DR0-3)", tid, errno);
    }
    const std::uint64_t control = dr7();
    if (control != 0 && ptrace(PTRACE_POKEUSER, tid, debugreg_offset(7),
                               reinterpret_cast<void*>(static_cast<std::uintptr_t>(control))) != 0)
        return ptrace_error("PTRACE_POKEUSER(DR7)", tid, errno);
    return ok_status();
}

std::optional<std::uint64_t> DebugRegisters::triggered_address(pid_t tid) const {
    errno = 0;
    const long dr6 = ptrace(PTRACE_PEEKUSER, tid, debugreg_offset(6), nullptr);
    if (errno != 0) return std::nullopt;
    const auto bits = static_cast<std::uint64_t>(dr6) & kDr6SlotBits;
    if (bits == 0) return std::nullopt;
    ptrace(PTRACE_POKEUSER, tid, debugreg_offset(6), nullptr);
    for (int i = 0; i < kSlots; ++i)
        if (((bits >> i) & 1) && slots_[i].refs > 0) return slots_[i].addr;
    return std::nullopt;
}

} // namespace tpagent::arch::x86_64
