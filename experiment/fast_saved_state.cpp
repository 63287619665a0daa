#include "experiment/fast_saved_state.hpp"
#include <algorithm>

namespace tpagent::experiment {

FastSavedState::FastSavedState(const arch::Architecture& arch) : arch_(arch) {
    const auto saved = arch.fast_saved_state();
    // Bounded: the state goes into every frame that collects it, within a chunk.
    if (saved.bytes == 0 || saved.bytes > (64u << 10)) return;
    bytes_ = saved.bytes;
    frame_offset_ = saved.frame_offset;
    held_ = arch.fast_saved_state_registers();
    held_.resize(arch.registers().size(), false);
    if (std::ranges::none_of(held_, [](bool b) { return b; })) bytes_ = 0;
}

bool FastSavedState::wanted_by(const trace::RegisterMask& mask) const {
    if (bytes_ == 0) return false;
    bool every = true, wanted = false;
    for (unsigned r = 0; r < held_.size(); ++r) {
        every = every && mask.test(r);
        wanted = wanted || (held_[r] && mask.test(r));
    }
    return wanted && !every;
}

void FastSavedState::place(std::span<const std::uint8_t> state, std::span<std::uint8_t> g) const {
    if (state.size() != bytes_) return;
    std::vector<bool> placed;
    arch_.fast_saved_state_to_g(state, g, placed);
}

int FastSavedState::held_register(std::uint32_t g_offset, std::uint32_t bytes) const {
    const auto regs = arch_.registers();
    for (std::size_t r = 0; r < held_.size() && r < regs.size(); ++r)
        if (held_[r] && regs[r].g_offset == g_offset && regs[r].size == bytes)
            return static_cast<int>(r);
    return -1;
}

bool FastSavedState::holds(std::uint32_t g_offset, std::uint32_t bytes) const {
    return held_register(g_offset, bytes) >= 0;
}

trace::HoldsRegister FastSavedState::holds_in(std::span<const std::uint8_t> state) const {
    std::vector<bool> placed; // decoded once for the frame
    if (state.size() == bytes_) {
        std::vector<std::uint8_t> g(arch_.g_size());
        arch_.fast_saved_state_to_g(state, g, placed);
    }
    return [this, placed = std::move(placed)](std::uint32_t g_offset, std::uint32_t bytes) {
        const int r = held_register(g_offset, bytes);
        return r >= 0 && static_cast<std::size_t>(r) < placed.size() &&
               placed[static_cast<std::size_t>(r)];
    };
}

} // namespace tpagent::experiment
