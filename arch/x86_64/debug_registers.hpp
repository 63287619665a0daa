// Hardware watchpoints and breakpoints through the x86 debug registers DR0-3, DR6, DR7.
// One DebugRegisters per process holds the wanted state; apply() copies it into a thread
// (every thread of the process needs it, including ones created later).
//
// Read watchpoints (Z3) are refused: x86 can only trap on writes or on any access. gdb then
// sets an access watchpoint and tells reads from writes by comparing the value.
#pragma once
#include "arch/arch.hpp"
#include "base/result.hpp"
#include <array>
#include <cstdint>
#include <optional>
#include <sys/types.h>

namespace tpagent::arch::x86_64 {

enum class HwBreakKind : std::uint8_t { Execute, Write, Access };

class DebugRegisters {
  public:
    static constexpr int kSlots = 4;

    // Covers [addr, addr+len) with naturally aligned 1/2/4/8-byte slots (an unaligned or odd
    // range takes several); fails without change when there are not enough free slots.
    Status insert_watchpoint(WatchKind kind, std::uint64_t addr, std::uint64_t len);
    Status remove_watchpoint(WatchKind kind, std::uint64_t addr, std::uint64_t len);
    // Hardware execute breakpoint (Z1).
    Status insert_breakpoint(std::uint64_t addr);
    Status remove_breakpoint(std::uint64_t addr);

    void clear() { slots_ = {}; }
    bool empty() const;
    std::uint64_t dr7() const;
    std::uint64_t slot_address(int i) const { return slots_[i].addr; }

    // Writes DR0-3 and DR7 of a stopped thread.
    Status apply(pid_t tid) const;

    // The watched address of the slot that fired, from the thread's DR6, which is then
    // cleared. nullopt when no enabled slot fired (e.g. a single-step or int3 trap).
    std::optional<std::uint64_t> triggered_address(pid_t tid) const;

  private:
    struct Slot {
        std::uint64_t addr = 0;
        std::uint8_t len = 0; // 1, 2, 4 or 8
        HwBreakKind kind = HwBreakKind::Execute;
        int refs = 0; // identical requests share a slot
    };
    // The slot of `plan` already watching exactly [addr, addr+len) for `kind`, or nullptr.
    static Slot* find(std::array<Slot, kSlots>& plan, HwBreakKind kind, std::uint64_t addr,
                      std::uint8_t len);
    Status insert(HwBreakKind kind, std::uint64_t addr, std::uint64_t len);
    Status remove(HwBreakKind kind, std::uint64_t addr, std::uint64_t len);

    std::array<Slot, kSlots> slots_{};
};

} // namespace tpagent::arch::x86_64
