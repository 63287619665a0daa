// Debug-register slot planning, and real hardware watchpoints on a traced child.
#include "arch/x86_64/debug_registers.hpp"
#include "tests/unit/arch/traced_child.hpp"
#include "tests/unit/skip.hpp"
#include <catch2/catch.hpp>
#include <cstddef>
#include <cstdint>
#include <sys/user.h>

using namespace tpagent::arch;
using namespace tpagent::arch::x86_64;
using tpagent::test::TracedChild;

namespace {

alignas(8) volatile std::uint64_t g_watched = 0;
alignas(8) volatile std::uint64_t g_read_only = 5;

void write_child() {
    g_watched = 42;
    _exit(0);
}

void read_child() {
    const std::uint64_t v = g_read_only;
    _exit(static_cast<int>(v));
}

__attribute__((noinline)) void hw_breakpoint_target() {
    __asm__ volatile("nop");
}

void execute_child() {
    hw_breakpoint_target();
    _exit(3);
}

std::uint64_t address_of(const volatile void* p) {
    return reinterpret_cast<std::uintptr_t>(p);
}

alignas(8) volatile std::uint64_t g_probed = 0;

void probe_child() {
    g_probed = 1;
    _exit(0);
}

// Whether this machine's debug registers trap at all: many VMs take DR0-DR7 and never fire
// (gdb's native `watch` then never stops either). Asked with raw POKEUSERs, not through
// DebugRegisters, so that a fault of the code under test fails the tests rather than skip them.
bool debug_registers_fire() {
    static const bool fire = [] {
        TracedChild child(probe_child);
        const auto dr = [](int i) { return offsetof(struct user, u_debugreg) + 8 * i; };
        const std::uint64_t dr7 = 0x1 | (0x1ull << 16) | (0x2ull << 18); // L0, write, 8 bytes
        if (!child.stopped() ||
            ptrace(PTRACE_POKEUSER, child.pid(), reinterpret_cast<void*>(dr(0)),
                   reinterpret_cast<void*>(address_of(&g_probed))) != 0 ||
            ptrace(PTRACE_POKEUSER, child.pid(), reinterpret_cast<void*>(dr(7)),
                   reinterpret_cast<void*>(dr7)) != 0)
            return false;
        return child.resume() == SIGTRAP;
    }();
    return fire;
}

// Applies `dr` to a fresh child; false, the test skipped, when this machine's debug registers
// cannot be set or never trap.
bool apply_or_skip(const DebugRegisters& dr, pid_t pid) {
    const auto status = dr.apply(pid);
    if (!status.ok()) {
        tpagent::test::skip("debug registers unavailable here: " + status.error().text);
        return false;
    }
    if (!debug_registers_fire()) {
        tpagent::test::skip("this machine's debug registers take a watchpoint but never trap");
        return false;
    }
    return true;
}

} // namespace

TEST_CASE("debug registers: DR7 encoding of write, access and execute slots") {
    DebugRegisters dr;
    REQUIRE(dr.insert_watchpoint(WatchKind::Write, 0x1000, 8).ok());
    REQUIRE(dr.insert_watchpoint(WatchKind::Access, 0x2002, 2).ok());
    REQUIRE(dr.insert_breakpoint(0x401000).ok());
    // Slot 0: L0, RW=01, LEN=10. Slot 1: L1, RW=11, LEN=01. Slot 2: L2, RW=00, LEN=00.
    const std::uint64_t want = 0x1 | 0x4 | 0x10 | (0x9ull << 16) | (0x7ull << 20);
    CHECK(dr.dr7() == want);
    CHECK(dr.slot_address(0) == 0x1000);
    CHECK(dr.slot_address(1) == 0x2002);
    CHECK(dr.slot_address(2) == 0x401000);
}

TEST_CASE("debug registers: unaligned ranges split into aligned slots") {
    DebugRegisters dr;
    // 0x1001..0x100b: 1 @1001, 2 @1002, 4 @1004, 4 @1008 would need 4 slots for 11 bytes.
    REQUIRE(dr.insert_watchpoint(WatchKind::Write, 0x1001, 11).ok());
    CHECK(dr.slot_address(0) == 0x1001);
    CHECK(dr.slot_address(1) == 0x1002);
    CHECK(dr.slot_address(2) == 0x1004);
    CHECK(dr.slot_address(3) == 0x1008);
    // No room left: nothing changes.
    const std::uint64_t before = dr.dr7();
    const auto full = dr.insert_watchpoint(WatchKind::Write, 0x3000, 1);
    REQUIRE_FALSE(full.ok());
    CHECK(full.error().code == tpagent::ErrorCode::TooLarge); // an E reply: others were accepted
    CHECK(dr.dr7() == before);
    REQUIRE(dr.remove_watchpoint(WatchKind::Write, 0x1001, 11).ok());
    CHECK(dr.empty());
}

TEST_CASE("debug registers: too many, zero length, read-only and unknown removals fail") {
    DebugRegisters dr;
    for (int i = 0; i < DebugRegisters::kSlots; ++i)
        REQUIRE(dr.insert_watchpoint(WatchKind::Write, 0x1000 + 8 * i, 8).ok());
    CHECK_FALSE(dr.insert_watchpoint(WatchKind::Access, 0x5000, 4).ok());
    // An identical request shares its slot.
    CHECK(dr.insert_watchpoint(WatchKind::Write, 0x1000, 8).ok());
    REQUIRE(dr.remove_watchpoint(WatchKind::Write, 0x1000, 8).ok());
    CHECK(dr.slot_address(0) == 0x1000);
    REQUIRE(dr.remove_watchpoint(WatchKind::Write, 0x1000, 8).ok());
    CHECK(dr.slot_address(0) == 0);

    CHECK(dr.insert_watchpoint(WatchKind::Write, 0x1000, 0).error().code ==
          tpagent::ErrorCode::BadPacket);
    CHECK(dr.insert_watchpoint(WatchKind::Read, 0x1000, 8).error().code ==
          tpagent::ErrorCode::Unsupported);
    CHECK(dr.remove_watchpoint(WatchKind::Access, 0x1008, 8).error().code ==
          tpagent::ErrorCode::NotFound);
}

TEST_CASE("debug registers: a write watchpoint traps the writing child") {
    DebugRegisters dr;
    REQUIRE(dr.insert_watchpoint(WatchKind::Write, address_of(&g_watched), 8).ok());
    TracedChild child(write_child);
    REQUIRE(child.stopped());
    if (!apply_or_skip(dr, child.pid())) return;
    CHECK_FALSE(dr.triggered_address(child.pid()).has_value());

    REQUIRE(child.resume() == SIGTRAP);
    const auto hit = dr.triggered_address(child.pid());
    REQUIRE(hit.has_value());
    CHECK(*hit == address_of(&g_watched));
    CHECK_FALSE(dr.triggered_address(child.pid()).has_value()); // DR6 was cleared

    REQUIRE(child.resume() == -1);
    CHECK(child.exit_status() == 0);
}

TEST_CASE("debug registers: an access watchpoint traps a read, a write one does not") {
    {
        DebugRegisters dr;
        REQUIRE(dr.insert_watchpoint(WatchKind::Access, address_of(&g_read_only), 8).ok());
        TracedChild child(read_child);
        if (!apply_or_skip(dr, child.pid())) return;
        REQUIRE(child.resume() == SIGTRAP);
        CHECK(dr.triggered_address(child.pid()) == address_of(&g_read_only));
        REQUIRE(child.resume() == -1);
        CHECK(child.exit_status() == 5);
    }
    {
        DebugRegisters dr;
        REQUIRE(dr.insert_watchpoint(WatchKind::Write, address_of(&g_read_only), 8).ok());
        TracedChild child(read_child);
        if (!apply_or_skip(dr, child.pid())) return;
        REQUIRE(child.resume() == -1);
        CHECK(child.exit_status() == 5);
    }
}

TEST_CASE("debug registers: a hardware execute breakpoint stops before the instruction") {
    DebugRegisters dr;
    const auto target = reinterpret_cast<std::uintptr_t>(&hw_breakpoint_target);
    REQUIRE(dr.insert_breakpoint(target).ok());
    TracedChild child(execute_child);
    if (!apply_or_skip(dr, child.pid())) return;
    REQUIRE(child.resume() == SIGTRAP);
    CHECK(dr.triggered_address(child.pid()) == target);

    // Clear it so the resumed instruction does not fault again.
    dr.clear();
    REQUIRE(dr.apply(child.pid()).ok());
    REQUIRE(child.resume() == -1);
    CHECK(child.exit_status() == 3);
}
