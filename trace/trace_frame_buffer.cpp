#include "trace/trace_frame_buffer.hpp"

#include "protocol/hex.hpp"
#include <algorithm>
#include <atomic>
#include <cerrno>
#include <cstring>
#include <fmt/format.h>
#include <new>

namespace tpagent::trace {

TraceFrameBuffer::TraceFrameBuffer(std::size_t register_block_size, std::size_t size)
    : register_block_size_(register_block_size), size_(0) {
    if (!set_size(size) && !set_size(kDefaultSize)) throw std::bad_alloc();
}

Status TraceFrameBuffer::set_size(std::size_t size) {
    if (size == 0 || size > kMaxSize)
        return make_error(ErrorCode::TooLarge,
                          fmt::format("trace buffer size {:#x} outside 1..{:#x}", size, kMaxSize));
    if (size != size_) {
        MappedBytes storage(size); // pages become resident only as frames arrive
        if (!storage.data())
            return make_error(ErrorCode::SystemError, fmt::format("trace buffer of {:#x} bytes: {}",
                                                                  size, std::strerror(errno)));
        storage_ = std::move(storage);
    }
    size_ = size;
    clear();
    return ok_status();
}

void TraceFrameBuffer::clear() {
    index_.clear();
    unrecorded_from_ = 0;
    unrecorded_discards_ = 0;
    created_ = 0;
    logical_end_ = 0;
    shared_ = nullptr;
}

void TraceFrameBuffer::share(SharedBufferFrames* source) {
    clear();
    shared_ = source;
    seen_discards_ = source ? source->discards() : 0;
}

std::uint64_t TraceFrameBuffer::frames_created() const {
    return shared_ ? shared_->frames_created() : created_;
}

std::size_t TraceFrameBuffer::bytes_free() const {
    // A shared buffer's chunks are whole, so it can hold more than the size asked for.
    if (shared_) return std::min(shared_->bytes_free(), size_);
    if (index_.empty()) return size_;
    std::size_t head = index_.front().offset;
    std::size_t tail = index_.back().offset + index_.back().size;
    if (index_.back().offset < head) return head - tail; // wrapped: room between the two
    return size_ - tail + head;
}

std::optional<std::size_t> TraceFrameBuffer::reserve(std::size_t size) {
    if (size > size_) return std::nullopt;
    while (!index_.empty()) {
        std::size_t head = index_.front().offset;
        std::size_t tail = index_.back().offset + index_.back().size;
        bool wrapped = index_.back().offset < head;
        if (!wrapped) {
            if (size_ - tail >= size) return tail;
            if (head >= size) return 0; // skip the unused tail, start again at 0
        } else if (head - tail >= size) {
            return tail;
        }
        if (!circular_ || (transit_ && !index_.front().recorded)) return std::nullopt;
        if (!index_.front().recorded) ++unrecorded_discards_;
        if (unrecorded_from_ > 0) --unrecorded_from_;
        index_.pop_front();
    }
    return 0;
}

TraceFrameBuffer::Commit TraceFrameBuffer::commit(const FrameBuilder& frame, std::uint64_t pc) {
    return commit_bytes(frame.bytes(), pc);
}

TraceFrameBuffer::Commit TraceFrameBuffer::commit_bytes(std::span<const std::uint8_t> bytes,
                                                        std::uint64_t pc,
                                                        std::uint32_t registers_valid) {
    if (bytes.size() < kFrameHeaderSize) return Commit::Invalid;
    const std::uint16_t tracepoint = frame_tracepoint(bytes.data());
    if (tracepoint == 0) return Commit::Invalid;
    if (shared_) return registers_valid ? Commit::Invalid : shared_->append(bytes, pc);
    std::size_t size = bytes.size(), raw = bytes.size();
    if (registers_valid != 0) {
        // A short R block: keep the whole blocks only (bytes may be padded); in the raw stream
        // the R block is full size.
        const auto [whole, wide] = sizes_of(bytes, registers_valid);
        size = whole;
        raw = wide;
    }
    auto room = append(size, tracepoint, pc, registers_valid, raw);
    if (!room) return Commit::Full;
    std::memcpy(room->data(), bytes.data(), size);
    set_frame_length(room->data(), static_cast<std::uint32_t>(size - kFrameHeaderSize));
    return Commit::Stored;
}

std::pair<std::size_t, std::size_t>
TraceFrameBuffer::sizes_of(std::span<const std::uint8_t> frame,
                           std::uint32_t registers_valid) const {
    if (registers_valid == 0) return {frame.size(), frame.size()};
    const FrameView view(frame, registers_valid);
    // Served, each R block is g-sized: longer than a short block, or shorter than one that
    // carries saved FP/vector state.
    std::size_t pos = kFrameHeaderSize, blocks = 0;
    while (auto b = view.block_at(pos))
        if (b->type == kRegistersBlock) ++blocks;
    return {pos, pos - blocks * registers_valid + blocks * register_block_size_};
}

std::optional<std::span<std::uint8_t>>
TraceFrameBuffer::append(std::size_t size, std::uint16_t tracepoint, std::uint64_t pc,
                         std::uint32_t registers_valid, std::size_t raw_size) {
    auto offset = reserve(size);
    if (!offset) return std::nullopt;
    std::uint8_t* data = storage_.data() + *offset;
    index_.push_back(Entry{data, *offset, size, logical_end_, raw_size, pc, tracepoint,
                           registers_valid, 0, 0, 0});
    logical_end_ += raw_size;
    ++created_;
    return std::span<std::uint8_t>(data, size);
}

SharedFrame TraceFrameBuffer::as_shared(const Entry& e) {
    return SharedFrame{
        e.data, static_cast<std::uint32_t>(e.size), e.registers_valid, e.pc, e.stamp, e.chunk,
        e.epoch};
}

void TraceFrameBuffer::renumber(std::size_t from) const {
    std::uint64_t logical = from == 0 ? 0 : index_[from - 1].logical + index_[from - 1].raw;
    for (std::size_t i = from; i < index_.size(); ++i) {
        index_[i].logical = logical;
        logical += index_[i].raw;
    }
    logical_end_ = logical;
}

void TraceFrameBuffer::refresh() const {
    if (!shared_) return;
    std::size_t from = index_.size(); // the first entry whose number or offset changed
    if (const std::uint64_t d = shared_->discards(); d != seen_discards_) {
        seen_discards_ = d;
        auto kept = std::stable_partition(index_.begin(), index_.end(), [&](const Entry& e) {
            return shared_->holds(as_shared(e));
        });
        if (kept != index_.end()) {
            unrecorded_discards_ += static_cast<std::uint64_t>(
                std::count_if(kept, index_.end(), [](const Entry& e) { return !e.recorded; }));
            index_.erase(kept, index_.end());
            from = 0;
            unrecorded_from_ = 0; // positions moved: look again from the first
        }
    }
    found_.clear();
    shared_->take_new(found_);
    const std::size_t first_new = index_.size();
    for (const SharedFrame& f : found_) {
        const std::span<const std::uint8_t> bytes(f.bytes, f.size);
        if (f.size < kFrameHeaderSize || frame_tracepoint(f.bytes) == 0) continue;
        index_.push_back(Entry{f.bytes, 0, f.size, 0, sizes_of(bytes, f.registers_valid).second,
                               f.pc, frame_tracepoint(f.bytes), f.registers_valid, f.stamp, f.chunk,
                               f.epoch});
    }
    // Read in place: a chunk reused since take_new checked it gave other bytes (a seqlock read,
    // as SharedBufferFrames::copy's). Those frames were discarded with it: not indexed.
    std::atomic_thread_fence(std::memory_order_acquire);
    const auto gone =
        std::remove_if(index_.begin() + static_cast<std::ptrdiff_t>(first_new), index_.end(),
                       [&](const Entry& e) { return !shared_->holds(as_shared(e)); });
    unrecorded_discards_ += static_cast<std::uint64_t>(index_.end() - gone);
    index_.erase(gone, index_.end());
    if (first_new < index_.size()) {
        const auto by_stamp = [](const Entry& a, const Entry& b) { return a.stamp < b.stamp; };
        const auto mid = index_.begin() + static_cast<std::ptrdiff_t>(first_new);
        // A writer slower to publish than another: its frames go back among the others.
        const auto moved = std::upper_bound(index_.begin(), mid, *mid, by_stamp);
        std::inplace_merge(moved, mid, index_.end(), by_stamp);
        from = std::min(from, static_cast<std::size_t>(moved - index_.begin()));
        unrecorded_from_ = std::min(unrecorded_from_, from);
    }
    if (from < index_.size() || (from == 0 && index_.empty())) renumber(from);
}

const std::uint8_t* TraceFrameBuffer::bytes_of(const Entry& e,
                                               std::vector<std::uint8_t>& copy) const {
    if (!shared_) return e.data;
    return shared_->copy(as_shared(e), copy) ? copy.data() : nullptr;
}

void TraceFrameBuffer::widen(const Entry& e, const std::uint8_t* frame,
                             std::vector<std::uint8_t>& out) const {
    out.assign(frame, frame + kFrameHeaderSize);
    const FrameView view(std::span<const std::uint8_t>(frame, e.size), e.registers_valid);
    const ShortRegisterBlock layout = short_block_of(e.registers_valid);
    std::size_t pos = kFrameHeaderSize;
    while (auto b = view.block_at(pos)) {
        if (b->type != kRegistersBlock) {
            out.insert(out.end(), b->encoded.begin(), b->encoded.end());
            continue;
        }
        out.push_back(static_cast<std::uint8_t>(kRegistersBlock));
        const std::size_t at = out.size();
        out.resize(at + register_block_size_, 0);
        layout.place(b->data, std::span(out).subspan(at));
    }
    set_frame_length(out.data(), static_cast<std::uint32_t>(out.size() - kFrameHeaderSize));
}

FrameInfo TraceFrameBuffer::make_info(std::size_t number) const {
    const Entry& e = index_[number];
    return FrameInfo{number, e.tracepoint,      e.pc,
                     e.size, e.registers_valid, short_block_of(e.registers_valid)};
}

ShortRegisterBlock TraceFrameBuffer::short_block_of(std::uint32_t registers_valid) const {
    if (registers_valid == 0) return {};
    if (shared_) {
        const ShortRegisterBlock layout = shared_->short_block(registers_valid);
        if (layout.size() == registers_valid) return layout;
    }
    return {registers_valid, 0, 0};
}

std::optional<FrameInfo> TraceFrameBuffer::info(std::size_t number) const {
    refresh();
    if (number >= index_.size()) return std::nullopt;
    return make_info(number);
}

std::optional<FrameView> TraceFrameBuffer::frame(std::size_t number) const {
    refresh();
    if (number >= index_.size()) return std::nullopt;
    const Entry& e = index_[number];
    const std::uint8_t* bytes = bytes_of(e, served_);
    if (!bytes) return std::nullopt; // overwritten since the index was brought up to date
    return FrameView(std::span<const std::uint8_t>(bytes, e.size),
                     e.registers_valid ? e.registers_valid : register_block_size_);
}

namespace {

struct Matcher {
    bool operator()(const FrameByNumber&, std::uint16_t, std::uint64_t) const { return false; }
    bool operator()(const FrameAtPc& q, std::uint16_t, std::uint64_t pc) const {
        return pc == q.pc;
    }
    bool operator()(const FrameOfTracepoint& q, std::uint16_t tp, std::uint64_t) const {
        return tp == q.tracepoint;
    }
    bool operator()(const FrameInRange& q, std::uint16_t, std::uint64_t pc) const {
        return q.start <= pc && pc <= q.end;
    }
    bool operator()(const FrameOutsideRange& q, std::uint16_t, std::uint64_t pc) const {
        return pc < q.start || pc > q.end;
    }
};

} // namespace

std::optional<FrameInfo> TraceFrameBuffer::find(const FrameQuery& query,
                                                std::optional<std::size_t> current) const {
    if (const auto* by_number = std::get_if<FrameByNumber>(&query)) {
        if (by_number->number < 0) return std::nullopt;
        return info(static_cast<std::size_t>(by_number->number));
    }
    refresh();
    std::size_t first = current ? *current + 1 : 0;
    for (std::size_t n = first; n < index_.size(); ++n) {
        const Entry& e = index_[n];
        if (std::visit([&](const auto& q) { return Matcher{}(q, e.tracepoint, e.pc); }, query))
            return make_info(n);
    }
    return std::nullopt;
}

std::uint64_t TraceFrameBuffer::raw_size() const {
    refresh();
    return index_.empty() ? 0 : logical_end_ - index_.front().logical;
}

std::size_t TraceFrameBuffer::read_raw(std::uint64_t offset, std::span<std::uint8_t> out) const {
    if (offset >= raw_size() || index_.empty()) return 0;
    std::uint64_t want = index_.front().logical + offset;
    // The last frame starting at or before `want`.
    auto it = std::upper_bound(index_.begin(), index_.end(), want,
                               [](std::uint64_t v, const Entry& e) { return v < e.logical; });
    --it;
    std::size_t done = 0;
    std::size_t skip = want - it->logical;
    std::vector<std::uint8_t> copy, wide;
    for (; it != index_.end() && done < out.size(); ++it, skip = 0) {
        const std::uint8_t* bytes = bytes_of(*it, copy);
        if (!bytes) break; // overwritten: the stream ends before it, never with a torn frame
        std::size_t size = it->size;
        if (it->registers_valid != 0) {
            widen(*it, bytes, wide);
            bytes = wide.data();
            size = wide.size();
        }
        std::size_t n = std::min(out.size() - done, size - skip);
        std::memcpy(out.data() + done, bytes + skip, n);
        done += n;
    }
    return done;
}

bool TraceFrameBuffer::raw_frame_of(const Entry& e, std::vector<std::uint8_t>& out) const {
    const std::uint8_t* bytes = bytes_of(e, shared_copy_);
    if (!bytes) return false;
    if (e.registers_valid != 0) {
        widen(e, bytes, out);
    } else {
        out.assign(bytes, bytes + e.size);
    }
    return true;
}

TraceFrameBuffer::FrameCopy TraceFrameBuffer::copy_frames(std::vector<std::uint8_t>& out) const {
    refresh();
    FrameCopy copied;
    out.reserve(out.size() + raw_size());
    std::vector<std::uint8_t> frame;
    for (const Entry& e : index_) {
        if (!raw_frame_of(e, frame)) {
            ++copied.gone;
            continue;
        }
        out.insert(out.end(), frame.begin(), frame.end());
        ++copied.frames;
    }
    return copied;
}

void TraceFrameBuffer::record_new(
    const std::function<void(const std::vector<std::uint8_t>&)>& record,
    const std::function<bool()>& enough) {
    refresh();
    std::size_t i = unrecorded_from_;
    for (; i < index_.size(); ++i) {
        Entry& e = index_[i];
        if (e.recorded) continue;
        if (enough && enough()) break;
        e.recorded = true;
        if (shared_) shared_->recorded(as_shared(e));
        if (raw_frame_of(e, recording_copy_)) // no refresh per frame: the index stays as it is
            record(recording_copy_);
        else
            ++unrecorded_discards_; // reused while it was copied
    }
    unrecorded_from_ = i;
    if (shared_) shared_->release_recorded();
}

Result<BufferSetting> parse_buffer_setting(std::string_view payload) {
    if (payload.starts_with("size:")) {
        std::string_view value = payload.substr(5);
        if (value == "-1") return BufferSetting{BufferSizeSetting{}};
        auto size = protocol::parse_hex_u64(value);
        if (!size) return make_error(ErrorCode::BadPacket, "QTBuffer:size: bad hex size");
        if (*size == 0 || *size > TraceFrameBuffer::kMaxSize)
            return make_error(ErrorCode::TooLarge,
                              fmt::format("QTBuffer:size: {:#x} outside 1..{:#x}", *size,
                                          TraceFrameBuffer::kMaxSize));
        return BufferSetting{BufferSizeSetting{static_cast<std::size_t>(*size)}};
    }
    if (payload == "circular:0") return BufferSetting{BufferCircularSetting{false}};
    if (payload == "circular:1") return BufferSetting{BufferCircularSetting{true}};
    return make_error(ErrorCode::BadPacket, "QTBuffer: expected size:<hex> or circular:<0|1>");
}

} // namespace tpagent::trace
