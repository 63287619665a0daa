// Frames a trace buffer serves from memory it does not own: the chunks a run with fast
// tracepoints writes into, shared with the traced program (experiment/shared_buffer_reader.hpp).
// The buffer indexes them in place; frames are never copied to be numbered, only to be served.
#pragma once
#include <cstddef>
#include <cstdint>
#include <functional>
#include <span>
#include <vector>

namespace tpagent::trace {

enum class CommitResult : std::uint8_t { Stored, Full, Invalid };

// Whether the register at [g_offset, g_offset + bytes) of the g block is held.
using HoldsRegister = std::function<bool(std::uint32_t g_offset, std::uint32_t bytes)>;

// Registers kept in a short R block as the machine saved them (a pad's FP/vector state
// area), turned into their places in the `g` block when the frame is served.
class SavedStateRegisters {
  public:
    virtual ~SavedStateRegisters() = default;
    // Writes the registers `state` holds into g, and nothing else.
    virtual void place(std::span<const std::uint8_t> state, std::span<std::uint8_t> g) const = 0;
    // Whether the register at [g_offset, g_offset + bytes) of the g block is one of those.
    virtual bool holds(std::uint32_t g_offset, std::uint32_t bytes) const = 0;
    // The same for this state: one may hold fewer (a thread's state lacking a part). Asked
    // once per frame: the answer may take decoding the state.
    virtual HoldsRegister holds_in(std::span<const std::uint8_t> state) const {
        (void)state;
        return
            [this](std::uint32_t g_offset, std::uint32_t bytes) { return holds(g_offset, bytes); };
    }
};

// Where a short R block's bytes (a fast tracepoint's) lie in the full `g` block: its first
// `prefix` bytes are the g block's first ones (the registers the jump pad saves); the `tail`
// bytes after them (the thread-pointer registers the collector adds) lie at `tail_offset`;
// `state` bytes after those, if any, are saved state that `saved` places.
struct ShortRegisterBlock {
    std::uint32_t prefix = 0;
    std::uint32_t tail_offset = 0;
    std::uint32_t tail = 0;
    std::uint32_t state = 0;
    const SavedStateRegisters* saved = nullptr; // set when state != 0

    std::uint32_t size() const { return prefix + tail + state; }
    // Whether the register at [g_offset, g_offset + bytes) of the g block was collected.
    bool holds(std::uint32_t g_offset, std::uint32_t bytes) const {
        return in_prefix_or_tail(g_offset, bytes) ||
               (state && saved && saved->holds(g_offset, bytes));
    }
    // The same for a frame's own block: its saved state may hold fewer registers.
    HoldsRegister holds_in(std::span<const std::uint8_t> block) const {
        HoldsRegister in_state;
        if (state && saved && block.size() >= size())
            in_state = saved->holds_in(block.subspan(prefix + tail, state));
        return [layout = *this, in_state](std::uint32_t g_offset, std::uint32_t bytes) {
            return layout.in_prefix_or_tail(g_offset, bytes) ||
                   (in_state && in_state(g_offset, bytes));
        };
    }
    bool in_prefix_or_tail(std::uint32_t g_offset, std::uint32_t bytes) const {
        return g_offset + bytes <= prefix ||
               (tail && g_offset >= tail_offset && g_offset + bytes <= tail_offset + tail);
    }
    // Copies a short block to its places in `g` (a full block); other bytes are left alone.
    void place(std::span<const std::uint8_t> block, std::span<std::uint8_t> g) const {
        for (std::size_t i = 0; i < prefix && i < block.size() && i < g.size(); ++i)
            g[i] = block[i];
        for (std::size_t i = 0; i < tail && prefix + i < block.size() && tail_offset + i < g.size();
             ++i)
            g[tail_offset + i] = block[prefix + i];
        if (state && saved && block.size() >= size())
            saved->place(block.subspan(prefix + tail, state), g);
    }
};

struct SharedFrame {
    const std::uint8_t* bytes = nullptr; // frame header and blocks, in place
    std::uint32_t size = 0;              // bytes of the frame, header included
    // A short R block (FrameInfo::registers_valid), 0 = full.
    std::uint32_t registers_valid = 0;
    std::uint64_t pc = 0;
    std::uint64_t stamp = 0; // collection order across writers
    // Where it lies: the chunk, and the chunk's epoch when the frame was found there.
    std::uint32_t chunk = 0;
    std::uint32_t epoch = 0;
};

class SharedBufferFrames {
  public:
    virtual ~SharedBufferFrames() = default;
    // Appends the frames completed since the last call, in collection order.
    virtual void take_new(std::vector<SharedFrame>& out) = 0;
    // Whether the frame is still stored (its chunk not reused since).
    virtual bool holds(const SharedFrame& frame) const = 0;
    // Copies the frame into out; false, out unspecified, if it was overwritten meanwhile.
    virtual bool copy(const SharedFrame& frame, std::vector<std::uint8_t>& out) const = 0;
    // Changes whenever stored frames were discarded (circular reuse): indexes recheck holds().
    virtual std::uint64_t discards() const = 0;
    virtual std::uint64_t frames_created() const = 0;
    virtual std::size_t bytes_free() const = 0;
    // How a short R block of `bytes` of its frames maps into the g block; size() 0 (or not
    // `bytes`) when none of its blocks has that size.
    virtual ShortRegisterBlock short_block(std::uint32_t bytes) const = 0;
    // Stores a frame written by tpagent itself (a trap tracepoint's), with a full R block.
    virtual CommitResult append(std::span<const std::uint8_t> frame, std::uint64_t pc) = 0;
    // Recording: the frame is in a file now; release_recorded() then lets writers reuse the
    // space of every sealed chunk all of whose frames are.
    virtual void recorded(const SharedFrame& frame) { (void)frame; }
    virtual void release_recorded() {}
};

} // namespace tpagent::trace
