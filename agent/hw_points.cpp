#include "agent/hw_points.hpp"

namespace tpagent::agent {

struct HwPoints::State {};

HwPoints::HwPoints() : state_(std::make_unique<State>()) {}
HwPoints::~HwPoints() = default;
Status HwPoints::insert(int, std::uint64_t, std::uint64_t) {
    return make_error(ErrorCode::Unsupported, "hardware points not available");
}
Status HwPoints::remove(int, std::uint64_t, std::uint64_t) {
    return make_error(ErrorCode::NotFound, "no such hardware point");
}
void HwPoints::clear() {}
bool HwPoints::any() const { return false; }
Status HwPoints::apply(pid_t) { return ok_status(); }
std::optional<HwHit> HwPoints::triggered(pid_t) { return std::nullopt; }

} // namespace tpagent::agent
