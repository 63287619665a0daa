// TraceFrameBuffer over frames it does not own (share()): indexed in place in stamp order,
// dropped when their storage is reused, served from checked copies.
#include "trace/trace_frame_buffer.hpp"
#include "test_support.hpp"

#include <deque>
#include <map>

using namespace tpagent;
using namespace tpagent::trace;
using namespace trace_test;

namespace {

// Frames in "chunks" of a fake shared store: each frame lives in its own byte vector, and a
// chunk's epoch changes when the test discards it.
class FakeSource final : public SharedBufferFrames {
  public:
    ShortRegisterBlock layout;     // of the short R blocks (size 0: the prefix is the whole block)
    ShortRegisterBlock with_state; // of those that also hold saved state
    ShortRegisterBlock short_block(std::uint32_t bytes) const override {
        return with_state.state && bytes == with_state.size() ? with_state : layout;
    }
    // A frame for tracepoint tp with one 8-byte memory block holding `value`, found at the
    // next take_new() with this stamp, in `chunk`.
    void add(std::uint16_t tp, std::uint64_t value, std::uint64_t stamp, std::uint32_t chunk,
             std::uint32_t registers_valid = 0, std::size_t register_bytes = 0) {
        FrameBuilder b(register_bytes);
        b.start(tp);
        if (register_bytes) REQUIRE(b.add_registers(Bytes(register_bytes, 0x11)).ok());
        Bytes v(8);
        for (int i = 0; i < 8; ++i)
            v[static_cast<std::size_t>(i)] = static_cast<std::uint8_t>(value >> (8 * i));
        b.add_memory(0x1000, v);
        Bytes bytes(b.bytes().begin(), b.bytes().end());
        if (registers_valid) { // cut the R block short, as a fast tracepoint's
            bytes.erase(
                bytes.begin() + static_cast<std::ptrdiff_t>(kFrameHeaderSize + 1 + registers_valid),
                bytes.begin() + static_cast<std::ptrdiff_t>(kFrameHeaderSize + 1 + register_bytes));
            set_frame_length(bytes.data(),
                             static_cast<std::uint32_t>(bytes.size() - kFrameHeaderSize));
        }
        store_.push_back(std::move(bytes));
        const Bytes& kept = store_.back();
        pending_.push_back({kept.data(), static_cast<std::uint32_t>(kept.size()), registers_valid,
                            std::uint64_t{0x400000} + tp, stamp, chunk, epoch_[chunk]});
        ++created_;
    }
    void discard(std::uint32_t chunk) {
        ++epoch_[chunk];
        ++discards_;
    }
    // Reuse of `chunk` starts while a copy is under way.
    bool reuse_during_copy = false;
    std::uint32_t reused_chunk = 0;

    void take_new(std::vector<SharedFrame>& out) override {
        std::stable_sort(pending_.begin(), pending_.end(),
                         [](const auto& a, const auto& b) { return a.stamp < b.stamp; });
        out.insert(out.end(), pending_.begin(), pending_.end());
        pending_.clear();
    }
    bool holds(const SharedFrame& f) const override { return epoch_.at(f.chunk) == f.epoch; }
    bool copy(const SharedFrame& f, std::vector<std::uint8_t>& out) const override {
        if (!holds(f)) return false;
        out.assign(f.bytes, f.bytes + f.size);
        if (reuse_during_copy && f.chunk == reused_chunk) return false;
        return true;
    }
    std::uint64_t discards() const override { return discards_; }
    std::uint64_t frames_created() const override { return created_; }
    std::size_t bytes_free() const override { return 1234; }
    CommitResult append(std::span<const std::uint8_t> frame, std::uint64_t pc) override {
        appended.emplace_back(frame.begin(), frame.end());
        appended_pc = pc;
        return CommitResult::Stored;
    }
    std::vector<Bytes> appended;
    std::uint64_t appended_pc = 0;

  private:
    std::deque<Bytes> store_;
    std::vector<SharedFrame> pending_;
    std::map<std::uint32_t, std::uint32_t> epoch_;
    std::uint64_t discards_ = 0;
    std::uint64_t created_ = 0;
};

std::uint64_t value_of(const TraceFrameBuffer& buf, std::size_t n) {
    auto f = buf.frame(n);
    REQUIRE(f);
    std::size_t pos = kFrameHeaderSize;
    while (auto b = f->block_at(pos))
        if (b->type == kMemoryBlock) {
            std::uint64_t v = 0;
            for (int i = 0; i < 8; ++i)
                v |= std::uint64_t{b->data[static_cast<std::size_t>(i)]} << (8 * i);
            return v;
        }
    FAIL("no memory block");
    return 0;
}

} // namespace

TEST_CASE("shared frames: numbered by stamp across writers, late ones merged in",
          "[trace][shared]") {
    TraceFrameBuffer buf(0);
    FakeSource src;
    buf.share(&src);
    CHECK(buf.shared());
    src.add(1, 10, 100, 0);
    src.add(1, 30, 300, 1);
    src.add(1, 20, 200, 0);
    REQUIRE(buf.frame_count() == 3);
    CHECK(value_of(buf, 0) == 10);
    CHECK(value_of(buf, 1) == 20);
    CHECK(value_of(buf, 2) == 30);
    // A writer slower to publish: its older frame goes before the newer ones.
    src.add(2, 15, 150, 2);
    src.add(2, 40, 400, 2);
    REQUIRE(buf.frame_count() == 5);
    CHECK(value_of(buf, 1) == 15);
    CHECK(value_of(buf, 4) == 40);
    CHECK(buf.info(1)->tracepoint == 2);
    CHECK(buf.info(1)->pc == 0x400002);
    CHECK(buf.frames_created() == 5);
    CHECK(buf.bytes_free() == 1234);
    // The raw stream is the frames in that order, back to back.
    const std::uint64_t total = buf.raw_size();
    Bytes all(total);
    CHECK(buf.read_raw(0, all) == total);
    CHECK(frame_tracepoint(all.data()) == 1);
    CHECK(frame_tracepoint(all.data() + buf.info(0)->size) == 2);
}

TEST_CASE("shared frames: a reused chunk's frames leave the index", "[trace][shared]") {
    TraceFrameBuffer buf(0);
    FakeSource src;
    buf.share(&src);
    src.add(1, 1, 1, 0);
    src.add(1, 2, 2, 1);
    src.add(1, 3, 3, 0);
    src.add(1, 4, 4, 1);
    REQUIRE(buf.frame_count() == 4);
    src.discard(0);
    REQUIRE(buf.frame_count() == 2);
    CHECK(value_of(buf, 0) == 2);
    CHECK(value_of(buf, 1) == 4);
    CHECK(buf.raw_size() == 2 * buf.info(0)->size);
    CHECK(buf.find(FrameOfTracepoint{1}, 0)->number == 1);
}

TEST_CASE("shared frames: a frame overwritten while copied is not served", "[trace][shared]") {
    TraceFrameBuffer buf(0);
    FakeSource src;
    buf.share(&src);
    src.add(1, 1, 1, 0);
    src.add(1, 2, 2, 1);
    REQUIRE(buf.frame_count() == 2);
    src.reuse_during_copy = true;
    src.reused_chunk = 1;
    CHECK_FALSE(buf.frame(1));
    CHECK(buf.frame(0));
    // The raw stream stops before it instead of handing out a torn frame.
    Bytes all(4096);
    CHECK(buf.read_raw(0, all) == buf.info(0)->size);
}

TEST_CASE("shared frames: short R blocks are widened in the raw stream", "[trace][shared]") {
    TraceFrameBuffer buf(32);
    FakeSource src;
    buf.share(&src);
    src.add(1, 7, 1, 0, 16, 32);
    REQUIRE(buf.frame_count() == 1);
    const auto info = buf.info(0);
    CHECK(info->registers_valid == 16);
    CHECK(buf.raw_size() == info->size + 16);
    Bytes all(buf.raw_size());
    REQUIRE(buf.read_raw(0, all) == all.size());
    CHECK(all[kFrameHeaderSize] == 'R');
    CHECK(all[kFrameHeaderSize + 1 + 15] == 0x11);
    CHECK(all[kFrameHeaderSize + 1 + 16] == 0); // the part the pad did not save
    CHECK(frame_length(all.data()) == all.size() - kFrameHeaderSize);
}

TEST_CASE("shared frames: tpagent's own frames go to the source; clear() takes them back",
          "[trace][shared]") {
    TraceFrameBuffer buf(4);
    FakeSource src;
    buf.share(&src);
    FrameBuilder b(4);
    b.start(3);
    REQUIRE(b.add_registers(Bytes{1, 2, 3, 4}).ok());
    CHECK(buf.commit(b, 0x1234) == TraceFrameBuffer::Commit::Stored);
    REQUIRE(src.appended.size() == 1);
    CHECK(src.appended_pc == 0x1234);
    CHECK(buf.commit_bytes(b.bytes(), 0x1234, 2) == TraceFrameBuffer::Commit::Invalid);
    buf.clear();
    CHECK_FALSE(buf.shared());
    CHECK(buf.commit(b, 0x1234) == TraceFrameBuffer::Commit::Stored);
    CHECK(src.appended.size() == 1);
    CHECK(buf.frame_count() == 1);
    CHECK(buf.frames_created() == 1);
}

TEST_CASE("shared frames: a short R block's tail goes to its place in the g block",
          "[trace][shared]") {
    TraceFrameBuffer buf(40);
    FakeSource src;
    src.layout = {12, 24, 8}; // 12 bytes of core; 8 bytes that belong at g offset 24
    buf.share(&src);
    src.add(1, 7, 1, 0, 20, 40); // a 20-byte R block of 0x11
    REQUIRE(buf.frame_count() == 1);
    const auto info = buf.info(0);
    CHECK(info->registers_valid == 20);
    CHECK(info->short_block.holds(0, 8));
    CHECK(info->short_block.holds(24, 8));
    CHECK_FALSE(info->short_block.holds(12, 8)); // between the core and the tail
    CHECK_FALSE(info->short_block.holds(32, 8));
    CHECK(buf.raw_size() == info->size + 20);
    Bytes all(buf.raw_size());
    REQUIRE(buf.read_raw(0, all) == all.size());
    const std::uint8_t* g = all.data() + kFrameHeaderSize + 1;
    CHECK(all[kFrameHeaderSize] == 'R');
    CHECK(Bytes(g, g + 12) == Bytes(12, 0x11));
    CHECK(Bytes(g + 12, g + 24) == Bytes(12, 0));
    CHECK(Bytes(g + 24, g + 32) == Bytes(8, 0x11));
    CHECK(Bytes(g + 32, g + 40) == Bytes(8, 0));
    // The memory block after it is intact.
    CHECK(all[kFrameHeaderSize + 1 + 40] == 'M');
}

// Saved state of 4 bytes that stands for the g block's bytes 32..39: each byte twice.
class DoublingState final : public SavedStateRegisters {
  public:
    void place(std::span<const std::uint8_t> state, std::span<std::uint8_t> g) const override {
        for (std::size_t i = 0; i < 4; ++i)
            g[32 + 2 * i] = g[33 + 2 * i] = state[i];
    }
    bool holds(std::uint32_t g_offset, std::uint32_t bytes) const override {
        return g_offset >= 32 && g_offset + bytes <= 40;
    }
    // A state whose first byte is 0 holds nothing (as a thread's that lacks the part).
    HoldsRegister holds_in(std::span<const std::uint8_t> state) const override {
        return [this, any = state[0] != 0](std::uint32_t g_offset, std::uint32_t bytes) {
            return any && holds(g_offset, bytes);
        };
    }
};

TEST_CASE("shared frames: saved state in a short R block is placed by its decoder",
          "[trace][shared]") {
    TraceFrameBuffer buf(40);
    FakeSource src;
    const DoublingState doubling;
    src.layout = {12, 24, 8};
    src.with_state = {12, 24, 8, 4, &doubling};
    buf.share(&src);
    src.add(1, 7, 1, 0, 20, 40); // short: no state
    src.add(1, 8, 2, 0, 24, 40); // short with the 4 bytes of state
    REQUIRE(buf.frame_count() == 2);
    const auto plain = buf.info(0), held = buf.info(1);
    CHECK_FALSE(plain->short_block.holds(32, 8));
    CHECK(held->registers_valid == 24);
    CHECK(held->short_block.holds(24, 8));
    CHECK(held->short_block.holds(32, 8));
    CHECK_FALSE(held->short_block.holds(12, 8));
    Bytes all(buf.raw_size());
    REQUIRE(buf.read_raw(0, all) == all.size());
    const std::uint8_t* g = all.data() + plain->size + 20 + kFrameHeaderSize + 1;
    CHECK(g[-1] == 'R');
    CHECK(Bytes(g + 24, g + 32) == Bytes(8, 0x11));
    CHECK(Bytes(g + 32, g + 40) == Bytes(8, 0x11));
    CHECK(Bytes(g + 12, g + 24) == Bytes(12, 0));
}

TEST_CASE("shared frames: a frame's own saved state says which of its registers it holds",
          "[trace][shared]") {
    const DoublingState doubling;
    const ShortRegisterBlock layout{12, 24, 8, 4, &doubling};
    Bytes block(24, 0x11);
    block[20] = 0;              // the state's first byte: this state holds none of its registers
    CHECK(layout.holds(32, 8)); // a state can
    CHECK_FALSE(layout.holds_in(block)(32, 8)); // this one does not
    CHECK(layout.holds_in(block)(24, 8));       // the tail is there whatever the state
    CHECK(layout.holds_in(block)(0, 8));        // and the prefix
    block[20] = 5;
    CHECK(layout.holds_in(block)(32, 8));
    CHECK_FALSE(layout.holds_in(Bytes(20, 0x11))(32, 8)); // a block too short for its state
}
