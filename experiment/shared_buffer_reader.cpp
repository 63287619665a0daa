#include "experiment/shared_buffer_reader.hpp"
#include "arch/frame_clock.hpp"
#include <algorithm>
#include <cstring>

namespace tpagent::experiment {

using namespace inproc;

SharedBufferReader::SharedBufferReader(std::shared_ptr<SharedBuffer> shared)
    : shared_(std::move(shared)), register_bytes_(frame_register_bytes(shared_->header())),
      state_bytes_(shared_->saved_state() ? shared_->saved_state()->bytes() : 0),
      chunk_count_(shared_->header().chunk_count), chunk_bytes_(shared_->header().chunk_bytes),
      seen_(chunk_count_) {
    for (std::uint32_t i = 0; i < seen_.size(); ++i)
        seen_[i].epoch = chunk(i)->epoch.load(std::memory_order_acquire);
}

std::uint32_t SharedBufferReader::chunks_in_use() const {
    const Header& h = shared_->header();
    return std::min({h.next_fresh.load(std::memory_order_acquire), h.chunk_count,
                     static_cast<std::uint32_t>(seen_.size())});
}

void SharedBufferReader::take_new(std::vector<trace::SharedFrame>& out) {
    // A writer's frames come out in its order even when it moves to another chunk meanwhile:
    // first note the chunks taken and in what order, then read them in that order. A writer
    // seals a chunk before it takes the next, so once its later chunk was noted, the earlier
    // one is final when read.
    taken_.clear();
    for (std::uint32_t i = 0; i < chunks_in_use(); ++i) {
        const ChunkHeader* c = chunk(i);
        if (static_cast<ChunkState>(c->state.load(std::memory_order_acquire)) != ChunkState::Free)
            taken_.push_back({c->taken, i});
    }
    std::sort(taken_.begin(), taken_.end());
    const std::size_t first = out.size();
    for (const auto& [order, i] : taken_) {
        const ChunkHeader* c = chunk(i);
        Seen& seen = seen_[i];
        const std::uint32_t epoch = c->epoch.load(std::memory_order_acquire);
        if (epoch != seen.epoch) seen = {epoch, 0, 0, 0}; // reused: its records are new ones
        const std::uint32_t committed =
            std::min<std::uint32_t>(c->committed.load(std::memory_order_acquire),
                                    static_cast<std::uint32_t>(chunk_payload(shared_->header())));
        const auto* payload = reinterpret_cast<const std::uint8_t*>(c) + kChunkHeaderBytes;
        const std::size_t before = out.size();
        std::uint32_t read = seen.read;
        while (read + sizeof(RecordHeader) + trace::kFrameHeaderSize <= committed) {
            RecordHeader rh;
            std::memcpy(&rh, payload + read, sizeof rh);
            // Sizes come from the program: a bad one ends this chunk rather than our reads.
            if (rh.size < kRecordBlocksOffset || rh.size % 8 != 0 || rh.size > committed - read) {
                read = committed;
                break;
            }
            const std::uint8_t* frame = payload + read + sizeof rh;
            const std::size_t length = trace::kFrameHeaderSize + trace::frame_length(frame);
            if (length <= rh.size - sizeof rh)
                out.push_back({frame, static_cast<std::uint32_t>(length), registers_of(rh.index),
                               rh.pc, rh.stamp, i, epoch});
            read += rh.size;
        }
        // Reused while we read: what we found may be torn; the next call starts it again.
        std::atomic_thread_fence(std::memory_order_acquire);
        if (c->epoch.load(std::memory_order_relaxed) != epoch) {
            out.resize(before);
            continue;
        }
        seen.read = read;
        seen.frames += static_cast<std::uint32_t>(out.size() - before);
    }
    // Each writer's records are in order; across writers the stamps decide.
    std::stable_sort(out.begin() + static_cast<std::ptrdiff_t>(first), out.end(),
                     [](const auto& a, const auto& b) { return a.stamp < b.stamp; });
}

void SharedBufferReader::recorded(const trace::SharedFrame& frame) {
    if (frame.chunk < seen_.size() && seen_[frame.chunk].epoch == frame.epoch)
        ++seen_[frame.chunk].recorded;
}

// The ring from recorded_count on: each seal whose chunk was read to its end and all of whose
// frames are recorded is released, in seal order, up to the first that is not.
void SharedBufferReader::release_recorded() {
    inproc::Header& h = shared_->header();
    if (!h.recording || chunk_count_ == 0) return;
    const std::uint64_t sealed = h.sealed_count.load(std::memory_order_acquire);
    for (std::uint64_t n = h.recorded_count.load(std::memory_order_relaxed); n < sealed; ++n) {
        const std::uint64_t entry =
            inproc::sealed_ring(shared_->local())[n % chunk_count_].load(std::memory_order_acquire);
        if ((entry >> 16) != (n & inproc::kSealNumberMask)) return; // its sealer is writing it
        const std::uint32_t i = static_cast<std::uint32_t>(entry & 0xffff);
        if (i >= seen_.size()) return;
        const ChunkHeader* c = chunk(i);
        const Seen& s = seen_[i];
        if (c->epoch.load(std::memory_order_acquire) != s.epoch ||
            s.read < c->committed.load(std::memory_order_acquire) || s.recorded < s.frames)
            return;
        // Release: our reads of the chunk happen before a reuser's writes.
        h.recorded_count.store(n + 1, std::memory_order_release);
    }
}

std::uint32_t SharedBufferReader::registers_of(std::uint32_t index) const {
    if (index == kTrapRecord) return 0;
    return register_bytes_ + ((index & kRecordHoldsState) ? state_bytes_ : 0);
}

bool SharedBufferReader::holds(const trace::SharedFrame& frame) const {
    return frame.chunk < seen_.size() &&
           chunk(frame.chunk)->epoch.load(std::memory_order_acquire) == frame.epoch;
}

bool SharedBufferReader::copy(const trace::SharedFrame& frame,
                              std::vector<std::uint8_t>& out) const {
    if (!holds(frame)) return false;
    out.assign(frame.bytes, frame.bytes + frame.size);
    std::atomic_thread_fence(std::memory_order_acquire);
    return chunk(frame.chunk)->epoch.load(std::memory_order_relaxed) == frame.epoch;
}

std::uint64_t SharedBufferReader::discards() const {
    return shared_->header().reused_count.load(std::memory_order_acquire);
}

std::uint64_t SharedBufferReader::frames_created() const {
    std::uint64_t n = shared_->header().discarded_frames.load(std::memory_order_acquire);
    for (std::uint32_t i = 0; i < chunks_in_use(); ++i)
        n += chunk(i)->frames.load(std::memory_order_acquire);
    return n;
}

std::size_t SharedBufferReader::bytes_free() const {
    const Header& h = shared_->header();
    if (!h.circular)
        return static_cast<std::size_t>(
            std::max<std::int64_t>(0, h.linear_budget.load(std::memory_order_relaxed)));
    std::size_t used = 0;
    for (std::uint32_t i = 0; i < chunks_in_use(); ++i)
        used += chunk(i)->committed.load(std::memory_order_relaxed);
    const std::size_t capacity = std::size_t{h.circular_keep} * chunk_payload(h);
    return capacity > used ? capacity - used : 0;
}

trace::CommitResult SharedBufferReader::append(std::span<const std::uint8_t> frame,
                                               std::uint64_t pc) {
    void* shared = shared_->local();
    Header* h = header_of(shared);
    const std::uint64_t size = (sizeof(RecordHeader) + frame.size() + 7) & ~std::uint64_t{7};
    if (size > chunk_payload(*h)) return trace::CommitResult::Full;
    // The program's memory: its run's chunks as tpagent configured them, or nothing is written.
    if (h->chunk_count != chunk_count_ || h->chunk_bytes != chunk_bytes_)
        return trace::CommitResult::Full;
    // No waiting for a sealer: it may be a thread stopped until tpagent serves its event.
    std::uint8_t* record = reserve_record(shared, writer_, size, nullptr);
    if (!record) return trace::CommitResult::Full;
    if (!h->circular && !claim_linear(h, writer_, static_cast<std::int64_t>(size)))
        return trace::CommitResult::Full;
    const RecordHeader rh{static_cast<std::uint32_t>(size), kTrapRecord, pc, arch::frame_clock()};
    std::memcpy(record, &rh, sizeof rh);
    std::memcpy(record + sizeof rh, frame.data(), frame.size());
    std::memset(record + sizeof rh + frame.size(), 0, size - sizeof rh - frame.size());
    publish_record(writer_, static_cast<std::uint32_t>(size));
    return trace::CommitResult::Stored;
}

} // namespace tpagent::experiment
