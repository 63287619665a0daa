// One trace frame in the trace-file frame format (trace/frame_format.hpp): built in private
// memory, and read where it is stored.
#pragma once
#include "base/result.hpp"
#include "trace/frame_format.hpp"
#include <cstddef>
#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <vector>

namespace tpagent::trace {

// Assembles one frame in private memory while a tracepoint's actions run; the buffer then
// copies it in with one reservation (TraceFrameBuffer::commit). Reuse one builder per
// collecting thread: start() keeps the allocation.
class FrameBuilder {
  public:
    explicit FrameBuilder(std::size_t register_block_size);

    void start(std::uint16_t tracepoint);
    // The block must have exactly register_block_size bytes.
    Status add_registers(std::span<const std::uint8_t> block);
    // Ranges longer than kMaxMemoryBlock become several consecutive M blocks.
    void add_memory(std::uint64_t address, std::span<const std::uint8_t> bytes);
    void add_variable(std::uint32_t number, std::int64_t value);
    // An S block; data beyond kMaxStaticData bytes is cut off.
    void add_static_data(std::span<const std::uint8_t> data);

    std::uint16_t tracepoint() const;
    // Header and blocks, ready to store.
    std::span<const std::uint8_t> bytes() const { return bytes_; }
    std::size_t size() const { return bytes_.size(); }
    std::size_t register_block_size() const { return register_block_size_; }

  private:
    // Room for `size` more block bytes at the end (the header's length grows with it).
    std::uint8_t* append(std::size_t size);

    std::size_t register_block_size_;
    std::vector<std::uint8_t> bytes_;
};

// One block of a stored frame; `data` points into the frame.
struct FrameBlock {
    char type = 0;                         // 'R', 'M', 'V' or 'S'
    std::uint64_t address = 0;             // M
    std::span<const std::uint8_t> data;    // R: register block, M: memory bytes, S: the data
    std::uint32_t variable = 0;            // V
    std::int64_t value = 0;                // V
    std::span<const std::uint8_t> encoded; // the whole block as stored, type byte included
};

// Read access to one stored frame. Views point into the buffer: get a fresh one per request
// (a later commit to a circular buffer may overwrite the frame).
class FrameView {
  public:
    FrameView(std::span<const std::uint8_t> frame, std::size_t register_block_size)
        : frame_(frame), register_block_size_(register_block_size) {}

    std::uint16_t tracepoint() const;
    std::span<const std::uint8_t> bytes() const { return frame_; }
    // All blocks in order; walking stops at an unknown or truncated block.
    std::vector<FrameBlock> blocks() const;
    // The same one at a time, without allocating: the block at `pos` (kFrameHeaderSize for the
    // first), with pos moved past it; nullopt, pos unchanged, at the end or a bad block.
    std::optional<FrameBlock> block_at(std::size_t& pos) const;

    // The (last) register block, if registers were collected.
    std::optional<std::span<const std::uint8_t>> registers() const;
    // Copies the collected bytes at [address, address + out.size()) and returns how many
    // leading bytes were available: reading stops at the first byte no M block covers (0 =
    // nothing collected at address). Where blocks overlap the latest collected one wins.
    std::size_t read_memory(std::uint64_t address, std::span<std::uint8_t> out) const;
    // The (first) static tracepoint data block's bytes, `$_sdata`; empty if none.
    std::span<const std::uint8_t> static_data() const;
    // The (last) collected value of a trace state variable.
    std::optional<std::int64_t> variable(std::uint32_t number) const;
    // qXfer:traceframe-info:read document: one <memory> per run of adjacent M blocks, one
    // <tvar> per collected variable.
    std::string traceframe_info() const;

  private:
    std::span<const std::uint8_t> frame_;
    std::size_t register_block_size_;
};

} // namespace tpagent::trace
