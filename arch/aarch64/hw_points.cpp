// Hardware breakpoints and watchpoints on AArch64: the kernel's NT_ARM_HW_BREAK and
// NT_ARM_HW_WATCH regsets (one address/control pair per slot), written into every thread.
#include "arch/hw_points.hpp"
#include <algorithm>
#include <cerrno>
#include <csignal>
#include <cstring>
#include <elf.h>
#include <fmt/format.h>
#include <sys/ptrace.h>
#include <sys/uio.h>
#include <vector>

#ifndef NT_ARM_HW_BREAK
#define NT_ARM_HW_BREAK 0x402
#define NT_ARM_HW_WATCH 0x403
#endif
#ifndef TRAP_HWBKPT
#define TRAP_HWBKPT 4
#endif

namespace tpagent::arch {
namespace {

struct DebugState { // struct user_hwdebug_state
    std::uint32_t dbg_info;
    std::uint32_t pad;
    struct {
        std::uint64_t addr;
        std::uint32_t ctrl;
        std::uint32_t pad;
    } regs[16];
};

// Control word: enabled, for EL0, the bytes of the aligned doubleword (BAS), and for a
// watchpoint which accesses (LSC: 1 load, 2 store, 3 both).
std::uint32_t control(int type, unsigned byte_mask) {
    const std::uint32_t lsc = type == 2 ? 2 : type == 3 ? 1 : type == 4 ? 3 : 0;
    return 1u | 2u << 1 | lsc << 3 | byte_mask << 5;
}

} // namespace

struct HwPoints::State {
    struct Point {
        int type; // 1 breakpoint, 2 write, 3 read, 4 access
        std::uint64_t addr;
        std::uint64_t len;
    };
    std::vector<Point> points;
    int break_slots = -1, watch_slots = -1; // learnt from the first thread
};

HwPoints::HwPoints() : state_(std::make_unique<State>()) {}
HwPoints::~HwPoints() = default;

Status HwPoints::insert(int type, std::uint64_t addr, std::uint64_t len) {
    if (type < 1 || type > 4) return make_error(ErrorCode::Unsupported, "no such point type");
    if (type == 1 && addr % 4 != 0)
        return make_error(ErrorCode::BadPacket, "a hardware breakpoint needs an aligned address");
    // A watchpoint covers bytes of one aligned doubleword.
    // An error, not "unsupported" (the empty reply), which gdb takes for a protocol error
    // once it has had other watchpoints accepted.
    if (type != 1 && (len == 0 || len > 8 || (addr % 8) + len > 8))
        return make_error(
            ErrorCode::TooLarge,
            fmt::format("a watchpoint of {} bytes at 0x{:x} crosses a doubleword", len, addr));
    const auto& pts = state_->points;
    const auto same_kind = std::count_if(pts.begin(), pts.end(), [&](const State::Point& p) {
        return (p.type == 1) == (type == 1);
    });
    const int slots = type == 1 ? state_->break_slots : state_->watch_slots;
    if (slots >= 0 && same_kind >= slots)
        return make_error(ErrorCode::TooLarge, "no free debug register");
    state_->points.push_back({type, addr, type == 1 ? 4 : len});
    return ok_status();
}

Status HwPoints::remove(int type, std::uint64_t addr, std::uint64_t) {
    auto& pts = state_->points;
    auto it = std::find_if(pts.begin(), pts.end(),
                           [&](const State::Point& p) { return p.type == type && p.addr == addr; });
    if (it == pts.end()) return make_error(ErrorCode::NotFound, "no such hardware point");
    pts.erase(it);
    return ok_status();
}

void HwPoints::clear() {
    state_->points.clear();
}

bool HwPoints::any() const {
    return !state_->points.empty();
}

Status HwPoints::apply(pid_t tid) {
    for (const int note : {NT_ARM_HW_BREAK, NT_ARM_HW_WATCH}) {
        DebugState st{};
        iovec iov{&st, sizeof st};
        if (ptrace(PTRACE_GETREGSET, tid, reinterpret_cast<void*>(static_cast<long>(note)), &iov) !=
            0)
            return make_error(
                ErrorCode::Unsupported,
                fmt::format("no debug registers for thread {}: {}", tid, std::strerror(errno)));
        const int slots = static_cast<int>(std::min<std::uint32_t>(st.dbg_info & 0xff, 16));
        (note == NT_ARM_HW_BREAK ? state_->break_slots : state_->watch_slots) = slots;
        std::memset(st.regs, 0, sizeof st.regs);
        int used = 0;
        for (const auto& p : state_->points) {
            if ((p.type == 1) != (note == NT_ARM_HW_BREAK)) continue;
            if (used == slots) return make_error(ErrorCode::TooLarge, "no free debug register");
            const std::uint64_t base = p.type == 1 ? p.addr : p.addr & ~std::uint64_t{7};
            const unsigned mask =
                p.type == 1 ? 0xfu : ((1u << p.len) - 1) << static_cast<unsigned>(p.addr - base);
            st.regs[used].addr = base;
            st.regs[used].ctrl = control(p.type, mask);
            ++used;
        }
        iov.iov_len =
            offsetof(DebugState, regs) + sizeof st.regs[0] * static_cast<std::size_t>(slots);
        if (ptrace(PTRACE_SETREGSET, tid, reinterpret_cast<void*>(static_cast<long>(note)), &iov) !=
            0)
            return make_error(ErrorCode::SystemError,
                              fmt::format("cannot set debug registers of thread {}: {}", tid,
                                          std::strerror(errno)));
    }
    return ok_status();
}

// The kernel reports the data address a watchpoint caught (or the pc of a breakpoint) in the
// signal's si_addr.
std::optional<HwHit> HwPoints::triggered(pid_t tid) {
    siginfo_t info{};
    if (ptrace(PTRACE_GETSIGINFO, tid, nullptr, &info) != 0 || info.si_code != TRAP_HWBKPT)
        return std::nullopt;
    const auto addr = reinterpret_cast<std::uint64_t>(info.si_addr);
    for (const auto& p : state_->points)
        if (p.type != 1 && addr >= (p.addr & ~std::uint64_t{7}) && addr < p.addr + p.len)
            return HwHit{p.type, p.addr};
    for (const auto& p : state_->points)
        if (p.type == 1 && p.addr == addr) return HwHit{1, p.addr};
    return std::nullopt;
}

} // namespace tpagent::arch
