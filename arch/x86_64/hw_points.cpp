#include "arch/hw_points.hpp"
#include <vector>
#include "arch/x86_64/debug_registers.hpp"

namespace tpagent::arch {

struct HwPoints::State {
    struct Point {
        int type;
        std::uint64_t addr;
        std::uint64_t len;
    };
    arch::x86_64::DebugRegisters regs;
    std::vector<Point> points; // to tell which kind of point an address that fired belongs to
};

HwPoints::HwPoints() : state_(std::make_unique<State>()) {}
HwPoints::~HwPoints() = default;

Status HwPoints::insert(int type, std::uint64_t addr, std::uint64_t len) {
    Status s = type == 1
                   ? state_->regs.insert_breakpoint(addr)
                   : state_->regs.insert_watchpoint(static_cast<arch::WatchKind>(type), addr, len);
    if (s) state_->points.push_back({type, addr, type == 1 ? 1 : len});
    return s;
}

Status HwPoints::remove(int type, std::uint64_t addr, std::uint64_t len) {
    Status s = type == 1
                   ? state_->regs.remove_breakpoint(addr)
                   : state_->regs.remove_watchpoint(static_cast<arch::WatchKind>(type), addr, len);
    if (!s) return s;
    auto& pts = state_->points;
    for (auto it = pts.begin(); it != pts.end(); ++it) {
        if (it->type == type && it->addr == addr) {
            pts.erase(it);
            break;
        }
    }
    return s;
}

void HwPoints::clear() {
    state_->regs.clear();
    state_->points.clear();
}

bool HwPoints::any() const {
    return !state_->regs.empty();
}

Status HwPoints::apply(pid_t tid) {
    return state_->regs.apply(tid);
}

std::optional<HwHit> HwPoints::triggered(pid_t tid) {
    auto addr = state_->regs.triggered_address(tid);
    if (!addr) return std::nullopt;
    // A slot may cover part of a longer range: report the point the address falls in.
    for (const auto& p : state_->points) {
        if (*addr >= p.addr && *addr < p.addr + std::max<std::uint64_t>(p.len, 1))
            return HwHit{p.type, p.type == 1 ? p.addr : *addr};
    }
    return HwHit{2, *addr};
}

} // namespace tpagent::arch
