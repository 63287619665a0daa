// The trace buffer of a run with fast tracepoints, seen from tpagent: the frames the program's
// threads write into the shared buffer's chunks (inproc/frame_chunks.hpp), found and served
// in place, and tpagent's own trap tracepoints' frames written among them.
#pragma once
#include "experiment/shared_buffer.hpp"
#include "inproc/frame_chunks.hpp"
#include "trace/shared_buffer_frames.hpp"
#include <memory>
#include <utility>
#include <vector>

namespace tpagent::experiment {

class SharedBufferReader final : public trace::SharedBufferFrames {
  public:
    // The shared buffer's chunks as configured for this run (configure_chunks); keeps the shared
    // buffer mapped for as long as its frames are wanted, even after the program is gone.
    explicit SharedBufferReader(std::shared_ptr<SharedBuffer> shared);

    void take_new(std::vector<trace::SharedFrame>& out) override;
    bool holds(const trace::SharedFrame& frame) const override;
    bool copy(const trace::SharedFrame& frame, std::vector<std::uint8_t>& out) const override;
    std::uint64_t discards() const override;
    std::uint64_t frames_created() const override;
    std::size_t bytes_free() const override;
    trace::ShortRegisterBlock short_block(std::uint32_t bytes) const override {
        return shared_->short_register_block(bytes);
    }
    trace::CommitResult append(std::span<const std::uint8_t> frame, std::uint64_t pc) override;
    void recorded(const trace::SharedFrame& frame) override;
    void release_recorded() override;

  private:
    const inproc::ChunkHeader* chunk(std::uint32_t i) const {
        return inproc::chunk_at(shared_->local(), i);
    }
    // Chunks tpagent may look at: those handed out this run.
    std::uint32_t chunks_in_use() const;

    std::shared_ptr<SharedBuffer> shared_;
    // The R block of a record with this index (0: a full one, tpagent's own).
    std::uint32_t registers_of(std::uint32_t index) const;

    std::uint32_t register_bytes_; // of the frames' R blocks
    std::uint32_t state_bytes_;    // after them in a record flagged kRecordHoldsState
    // The chunks as configured, while the program was stopped (the header is the program's).
    std::uint32_t chunk_count_;
    std::uint32_t chunk_bytes_;
    // Per chunk: the epoch its records were found in, and how far they were read.
    struct Seen {
        std::uint32_t epoch = 0;
        std::uint32_t read = 0;
        std::uint32_t frames = 0;   // found in this epoch
        std::uint32_t recorded = 0; // of those, in a recording's file
    };
    std::vector<Seen> seen_;
    std::vector<std::pair<std::uint64_t, std::uint32_t>> taken_; // take_new: (order, chunk)
    inproc::ChunkWriter writer_;                                 // tpagent's frames
};

} // namespace tpagent::experiment
