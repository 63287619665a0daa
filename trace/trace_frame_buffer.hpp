// The trace frame buffer: one byte area holding frames in the trace-file frame format
// (trace_frame.hpp), plus an index with one entry per frame so that selecting frame n is O(1)
// and searches never touch frame bytes.
//
// Linear mode: a frame that does not fit is refused (Commit::Full; the caller stops the
// trace with `tfull`). Circular mode: the oldest frames are discarded to make room; a frame
// never wraps around the end of the area (it starts again at offset 0 and the tail is left
// unused), so every frame stays contiguous.
//
// Frame numbers are positions among the frames still stored, oldest = 0, exactly as in a
// trace file written from qTBuffer: `tfind start` (QTFrame:0) finds the oldest remaining
// frame and the numbers gdb sees live and after tsave agree. So in a circular buffer that
// has wrapped, a frame's number drops by one for every older frame discarded;
// frames_created() keeps counting every frame ever stored (qTStatus tcreated).
//
// Raw reads (qTBuffer) see the stored frames oldest first as one contiguous byte stream,
// offset 0 = the oldest frame's header, without gaps, so gdb's tsave writes a valid frame
// section.
//
// Shared frames (share()): in a run with fast tracepoints the frames live in memory shared
// with the program, written there by its threads; the buffer indexes them in place, in the
// order they were collected (by the stamp each carries), and copies a frame only to serve it,
// checking that it was not overwritten meanwhile (circular mode reuses the oldest chunk of
// frames). Its own commits go there too. The index is brought up to date lazily, by whatever
// asks about frames, so a running trace costs tpagent nothing.
#pragma once
#include "trace/trace_frame.hpp"
#include "trace/frame_query.hpp"
#include "trace/shared_buffer_frames.hpp"
#include "base/mapped_bytes.hpp"
#include "base/result.hpp"
#include <cstddef>
#include <cstdint>
#include <deque>
#include <functional>
#include <optional>
#include <span>
#include <string_view>
#include <utility>
#include <variant>
#include <vector>

namespace tpagent::trace {

// Index entry and what QTFrame reports about a frame.
struct FrameInfo {
    std::size_t number = 0; // position among stored frames, oldest = 0
    std::uint16_t tracepoint = 0;
    std::uint64_t pc = 0;
    std::size_t size = 0; // bytes stored, header included
    // A short R block of registers_valid bytes (a fast tracepoint's pad saves only the core
    // registers), laid out in the g block as short_block says; 0 = a full block. Raw reads
    // (qTBuffer, tsave) see the block widened to full size.
    std::uint32_t registers_valid = 0;
    ShortRegisterBlock short_block;
};

class TraceFrameBuffer {
  public:
    static constexpr std::size_t kDefaultSize = 5 * 1024 * 1024;
    static constexpr std::size_t kMaxSize = std::size_t{1} << 30;

    // register_block_size: bytes of the `g` packet payload, the size of every R block. A
    // size outside 1..kMaxSize means kDefaultSize.
    explicit TraceFrameBuffer(std::size_t register_block_size, std::size_t size = kDefaultSize);

    std::size_t register_block_size() const { return register_block_size_; }
    FrameBuilder make_builder() const { return FrameBuilder(register_block_size_); }

    // QTBuffer:size; 1..kMaxSize bytes. Discards every frame.
    Status set_size(std::size_t size);
    // QTBuffer:circular; keeps the frames.
    void set_circular(bool circular) { circular_ = circular; }
    // Recording: the circular own area overwrites only frames record_new has handed out; a
    // frame that would overwrite one not yet handed out is Full (the recording takes what is
    // there, then the frame goes in).
    void set_transit(bool transit) { transit_ = transit; }
    // QTStart: discard every frame and reset the counters; frames are kept in the buffer's own
    // storage again.
    void clear();
    // From now on the frames are `source`'s (until clear()); discards every frame.
    void share(SharedBufferFrames* source);
    bool shared() const { return shared_ != nullptr; }

    using Commit = CommitResult;
    // Stores a finished frame with the pc it was collected at. Full: linear buffer without
    // room, or a frame larger than the whole buffer. Invalid: tracepoint number 0 (it would
    // end a trace file).
    Commit commit(const FrameBuilder& frame, std::uint64_t pc);
    // The same for a finished frame's bytes (header and blocks). registers_valid != 0: its R
    // block is that short (FrameInfo::registers_valid); only its whole blocks are stored.
    Commit commit_bytes(std::span<const std::uint8_t> frame, std::uint64_t pc,
                        std::uint32_t registers_valid = 0);

    // qTStatus figures.
    std::size_t frame_count() const {
        refresh();
        return index_.size();
    }
    std::uint64_t frames_created() const;
    std::size_t size() const { return size_; }
    std::size_t bytes_free() const;
    bool circular() const { return circular_; }

    std::optional<FrameInfo> info(std::size_t number) const;
    // Shared frames are served from a copy, valid until the next call.
    std::optional<FrameView> frame(std::size_t number) const;
    // QTFrame: FrameByNumber looks the number up (-1 finds nothing); the other queries
    // return the first matching frame after `current` (the selected frame, or from the
    // oldest when none is selected).
    std::optional<FrameInfo> find(const FrameQuery& query,
                                  std::optional<std::size_t> current) const;

    // qTBuffer: total bytes of the stored frames, and a copy of up to out.size() bytes from
    // offset; returns the count (0 at or past the end: reply `l`).
    std::uint64_t raw_size() const;
    std::size_t read_raw(std::uint64_t offset, std::span<std::uint8_t> out) const;
    // A snapshot: every stored frame, oldest first, appended to `out` as the raw stream has it
    // (R blocks widened). A shared frame reused while the copy ran (circular mode overwrites the
    // oldest first) is left out, never torn, and counted. Marks nothing: the recording and the
    // buffer go on as they were.
    struct FrameCopy {
        std::uint64_t frames = 0; // copied
        std::uint64_t gone = 0;   // overwritten before the copy reached them
    };
    FrameCopy copy_frames(std::vector<std::uint8_t>& out) const;
    // Recording (--record): every frame not handed out yet, in frame-number order, to
    // `record` (as the raw stream has it: R blocks widened), each marked as recorded; then
    // the shared buffer's writers get back the space of what is all recorded. A frame a slower
    // writer publishes late, among older ones, is handed out at the next call. Positions, not
    // creation counts: those of shared frames run ahead of the index while writers commit.
    // `enough`, if given, is asked before each frame: true leaves it and the rest for a later
    // call (a sink holding all it may).
    void record_new(const std::function<void(const std::vector<std::uint8_t>&)>& record,
                    const std::function<bool()>& enough = {});
    // Frames that left the buffer (overwritten, discarded) before record_new handed them
    // out, since the buffer was cleared.
    std::uint64_t unrecorded_discards() const { return unrecorded_discards_; }

  private:
    struct Entry {
        const std::uint8_t* data; // the frame's bytes (in storage_, or shared)
        std::size_t offset;       // in storage_
        std::size_t size;         // bytes stored, header included
        std::uint64_t logical;    // raw-stream bytes (R blocks at full size) before this frame
        std::uint64_t raw;        // its own raw-stream bytes
        std::uint64_t pc;
        std::uint16_t tracepoint;
        std::uint32_t registers_valid;
        // Shared frames: collection order, and where the frame lies.
        std::uint64_t stamp;
        std::uint32_t chunk;
        std::uint32_t epoch;
        bool recorded = false; // handed out by record_new
    };
    // Where a frame of `size` bytes goes, discarding old frames in circular mode.
    std::optional<std::size_t> reserve(std::size_t size);
    // Room for a frame of `size` stored bytes, `raw_size` in the raw stream, already indexed:
    // the caller writes the whole frame there. nullopt: Full.
    std::optional<std::span<std::uint8_t>> append(std::size_t size, std::uint16_t tracepoint,
                                                  std::uint64_t pc, std::uint32_t registers_valid,
                                                  std::size_t raw_size);
    FrameInfo make_info(std::size_t number) const;
    // A frame's whole blocks (what is stored: bytes may be padded) and the bytes they take in
    // the raw stream, short R blocks at full size.
    std::pair<std::size_t, std::size_t> sizes_of(std::span<const std::uint8_t> frame,
                                                 std::uint32_t registers_valid) const;
    // How an entry's short R block lies in the g block.
    ShortRegisterBlock short_block_of(std::uint32_t registers_valid) const;
    // Entry `e` as the raw stream has it (its R block widened), into `out`; false when it was
    // overwritten meanwhile. The index is left as it is (no refresh).
    bool raw_frame_of(const Entry& e, std::vector<std::uint8_t>& out) const;
    // The frame as it appears in the raw stream: short R blocks widened to full size.
    void widen(const Entry& e, const std::uint8_t* frame, std::vector<std::uint8_t>& out) const;
    // The frame's bytes: in place, or (shared) copied into `copy`; null if it is gone.
    const std::uint8_t* bytes_of(const Entry& e, std::vector<std::uint8_t>& copy) const;
    static SharedFrame as_shared(const Entry& e);
    // Shared frames: drops the discarded ones, indexes the new ones.
    void refresh() const;
    void renumber(std::size_t from) const; // logical offsets from entry `from` on

    std::size_t register_block_size_;
    std::size_t size_;
    MappedBytes storage_;
    bool circular_ = false;
    bool transit_ = false;
    SharedBufferFrames* shared_ = nullptr;
    // The index changes under const queries when shared frames arrive or go.
    mutable std::deque<Entry> index_; // frame-number order
    std::uint64_t created_ = 0;
    mutable std::uint64_t logical_end_ = 0;
    mutable std::uint64_t seen_discards_ = 0;
    // Recording: no frame before this position is unrecorded; frames gone unrecorded.
    mutable std::size_t unrecorded_from_ = 0;
    mutable std::uint64_t unrecorded_discards_ = 0;
    std::vector<std::uint8_t> recording_copy_;
    mutable std::vector<SharedFrame> found_;
    mutable std::vector<std::uint8_t> served_;      // the copy frame() returns
    mutable std::vector<std::uint8_t> shared_copy_; // raw_frame_of's
};

// QTBuffer payloads after "QTBuffer:": `size:<hex>` (`size:-1` = kDefaultSize) and
// `circular:<0|1>`.
struct BufferSizeSetting {
    std::size_t size = TraceFrameBuffer::kDefaultSize;
};
struct BufferCircularSetting {
    bool circular = false;
};
using BufferSetting = std::variant<BufferSizeSetting, BufferCircularSetting>;
Result<BufferSetting> parse_buffer_setting(std::string_view payload);

} // namespace tpagent::trace
