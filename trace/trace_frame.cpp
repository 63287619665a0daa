#include "trace/trace_frame.hpp"

#include <algorithm>
#include <cstring>
#include <fmt/format.h>
#include <set>

namespace tpagent::trace {

namespace {

template <typename T> void put_le(std::vector<std::uint8_t>& out, T value) {
    for (std::size_t i = 0; i < sizeof(T); ++i)
        out.push_back(static_cast<std::uint8_t>(static_cast<std::uint64_t>(value) >> (8 * i)));
}

template <typename T> T get_le(const std::uint8_t* p) {
    std::uint64_t v = 0;
    for (std::size_t i = 0; i < sizeof(T); ++i)
        v |= static_cast<std::uint64_t>(p[i]) << (8 * i);
    return static_cast<T>(v);
}

} // namespace

FrameBuilder::FrameBuilder(std::size_t register_block_size)
    : register_block_size_(register_block_size) {
    start(0);
}

void FrameBuilder::start(std::uint16_t tracepoint) {
    bytes_.clear();
    put_le<std::uint16_t>(bytes_, tracepoint);
    put_le<std::uint32_t>(bytes_, 0);
}

std::uint16_t FrameBuilder::tracepoint() const {
    return get_le<std::uint16_t>(bytes_.data());
}

void FrameBuilder::grow_length(std::size_t added) {
    auto length = get_le<std::uint32_t>(bytes_.data() + 2) + static_cast<std::uint32_t>(added);
    for (std::size_t i = 0; i < 4; ++i)
        bytes_[2 + i] = static_cast<std::uint8_t>(length >> (8 * i));
}

Status FrameBuilder::add_registers(std::span<const std::uint8_t> block) {
    if (block.size() != register_block_size_)
        return make_error(ErrorCode::BadPacket,
                          fmt::format("register block of {} bytes, expected {}", block.size(),
                                      register_block_size_));
    bytes_.push_back('R');
    bytes_.insert(bytes_.end(), block.begin(), block.end());
    grow_length(1 + block.size());
    return ok_status();
}

void FrameBuilder::add_memory(std::uint64_t address, std::span<const std::uint8_t> bytes) {
    do {
        std::size_t n = std::min(bytes.size(), kMaxMemoryBlock);
        bytes_.push_back('M');
        put_le<std::uint64_t>(bytes_, address);
        put_le<std::uint16_t>(bytes_, static_cast<std::uint16_t>(n));
        bytes_.insert(bytes_.end(), bytes.begin(), bytes.begin() + static_cast<std::ptrdiff_t>(n));
        grow_length(1 + 8 + 2 + n);
        address += n;
        bytes = bytes.subspan(n);
    } while (!bytes.empty());
}

void FrameBuilder::add_variable(std::uint32_t number, std::int64_t value) {
    bytes_.push_back('V');
    put_le<std::uint32_t>(bytes_, number);
    put_le<std::int64_t>(bytes_, value);
    grow_length(1 + 4 + 8);
}

std::uint16_t FrameView::tracepoint() const {
    return get_le<std::uint16_t>(frame_.data());
}

std::vector<FrameBlock> FrameView::blocks() const {
    std::vector<FrameBlock> out;
    std::size_t pos = kFrameHeaderSize;
    while (auto b = block_at(pos))
        out.push_back(*b);
    return out;
}

std::optional<FrameBlock> FrameView::block_at(std::size_t& pos) const {
    if (frame_.size() < kFrameHeaderSize) return std::nullopt;
    const std::size_t end =
        std::min(frame_.size(), kFrameHeaderSize + get_le<std::uint32_t>(frame_.data() + 2));
    if (pos >= end) return std::nullopt;
    const std::uint8_t* p = frame_.data();
    std::size_t at = pos;
    FrameBlock b;
    b.type = static_cast<char>(p[at++]);
    const std::size_t left = end - at;
    if (b.type == 'R') {
        if (left < register_block_size_) return std::nullopt;
        b.data = frame_.subspan(at, register_block_size_);
        at += register_block_size_;
    } else if (b.type == 'M') {
        if (left < 10) return std::nullopt;
        b.address = get_le<std::uint64_t>(p + at);
        std::size_t n = get_le<std::uint16_t>(p + at + 8);
        if (left - 10 < n) return std::nullopt;
        b.data = frame_.subspan(at + 10, n);
        at += 10 + n;
    } else if (b.type == 'V') {
        if (left < 12) return std::nullopt;
        b.variable = get_le<std::uint32_t>(p + at);
        b.value = get_le<std::int64_t>(p + at + 4);
        at += 12;
    } else {
        return std::nullopt;
    }
    b.encoded = frame_.subspan(pos, at - pos);
    pos = at;
    return b;
}

std::optional<std::span<const std::uint8_t>> FrameView::registers() const {
    std::optional<std::span<const std::uint8_t>> out;
    for (const FrameBlock& b : blocks())
        if (b.type == 'R') out = b.data;
    return out;
}

std::size_t FrameView::read_memory(std::uint64_t address, std::span<std::uint8_t> out) const {
    // Copy every block's part of the request in frame order, so later blocks overwrite
    // earlier ones, and remember which parts were covered.
    std::vector<std::pair<std::uint64_t, std::uint64_t>> covered; // offsets [begin, end)
    const std::uint64_t want = out.size();
    for (const FrameBlock& b : blocks()) {
        if (b.type != 'M' || b.data.empty()) continue;
        // Offsets relative to `address`, in unsigned arithmetic so wrap-around is handled.
        std::uint64_t rel = b.address - address;
        std::uint64_t begin, skip;
        if (rel < want) { // block starts inside the request
            begin = rel;
            skip = 0;
        } else if (address - b.address < b.data.size()) { // request starts inside the block
            begin = 0;
            skip = address - b.address;
        } else {
            continue;
        }
        std::uint64_t n = std::min<std::uint64_t>(want - begin, b.data.size() - skip);
        std::memcpy(out.data() + begin, b.data.data() + skip, n);
        covered.emplace_back(begin, begin + n);
    }
    std::sort(covered.begin(), covered.end());
    std::uint64_t done = 0;
    for (auto [begin, end] : covered) {
        if (begin > done) break;
        done = std::max(done, end);
    }
    return static_cast<std::size_t>(done);
}

std::optional<std::int64_t> FrameView::variable(std::uint32_t number) const {
    std::optional<std::int64_t> out;
    for (const FrameBlock& b : blocks())
        if (b.type == 'V' && b.variable == number) out = b.value;
    return out;
}

std::string FrameView::traceframe_info() const {
    std::string out = "<traceframe-info>\n";
    std::set<std::uint32_t> variables;
    std::optional<std::pair<std::uint64_t, std::uint64_t>> run; // start, length
    auto flush = [&] {
        if (run)
            out += fmt::format("<memory start=\"0x{:x}\" length=\"0x{:x}\"/>\n", run->first,
                               run->second);
        run.reset();
    };
    for (const FrameBlock& b : blocks()) {
        if (b.type == 'M') {
            if (run && run->first + run->second == b.address) {
                run->second += b.data.size();
            } else {
                flush();
                run.emplace(b.address, b.data.size());
            }
        } else if (b.type == 'V') {
            variables.insert(b.variable);
        }
    }
    flush();
    for (std::uint32_t v : variables)
        out += fmt::format("<tvar id=\"{}\"/>\n", v);
    out += "</traceframe-info>\n";
    return out;
}

} // namespace tpagent::trace
