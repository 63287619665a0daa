// The FP/vector state a fast tracepoint's pad saves (x86-64: its XSAVE area), carried at the
// end of the frame's R block for tracepoints that collect FP/vector registers, and turned into
// those registers' places in the `g` block when the frame is served.
#pragma once
#include "arch/arch.hpp"
#include "trace/shared_buffer_frames.hpp"
#include "trace/tracepoint.hpp"
#include <cstdint>
#include <span>
#include <vector>

namespace tpagent::experiment {

class FastSavedState final : public trace::SavedStateRegisters {
  public:
    // What arch's pads save (Architecture::fast_saved_state()); bytes() 0 where they cannot.
    explicit FastSavedState(const arch::Architecture& arch);

    std::uint32_t bytes() const { return bytes_; }
    std::int32_t frame_offset() const { return frame_offset_; }
    // Whether an R action with this mask asks for registers only the saved state holds. A
    // mask of every register is gdb's `$regs`, which fast tracepoints answer with the general
    // registers (as gdbserver's in-process agent does): saving the state costs a hit more
    // than the rest of its collection.
    bool wanted_by(const trace::RegisterMask& mask) const;

    void place(std::span<const std::uint8_t> state, std::span<std::uint8_t> g) const override;
    bool holds(std::uint32_t g_offset, std::uint32_t bytes) const override;
    trace::HoldsRegister holds_in(std::span<const std::uint8_t> state) const override;

  private:
    const arch::Architecture& arch_;
    std::uint32_t bytes_ = 0;
    std::int32_t frame_offset_ = 0;
    std::vector<bool> held_; // per regnum: a register a state can hold
    // The regnum at [g_offset, g_offset + bytes) among those, or -1.
    int held_register(std::uint32_t g_offset, std::uint32_t bytes) const;
};

} // namespace tpagent::experiment
