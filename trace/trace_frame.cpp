#include "trace/trace_frame.hpp"

#include <algorithm>
#include <cstring>
#include <fmt/format.h>
#include <set>

namespace tpagent::trace {

FrameBuilder::FrameBuilder(std::size_t register_block_size)
    : register_block_size_(register_block_size) {
    start(0);
}

void FrameBuilder::start(std::uint16_t tracepoint) {
    bytes_.resize(kFrameHeaderSize);
    store_frame_header(bytes_.data(), tracepoint, 0);
}

std::uint16_t FrameBuilder::tracepoint() const {
    return frame_tracepoint(bytes_.data());
}

std::uint8_t* FrameBuilder::append(std::size_t size) {
    const std::size_t at = bytes_.size();
    bytes_.resize(at + size);
    set_frame_length(bytes_.data(), static_cast<std::uint32_t>(bytes_.size() - kFrameHeaderSize));
    return bytes_.data() + at;
}

Status FrameBuilder::add_registers(std::span<const std::uint8_t> block) {
    if (block.size() != register_block_size_)
        return make_error(ErrorCode::BadPacket,
                          fmt::format("register block of {} bytes, expected {}", block.size(),
                                      register_block_size_));
    std::uint8_t* p = store_registers_header(append(registers_block_size(block.size())));
    if (!block.empty()) std::memcpy(p, block.data(), block.size());
    return ok_status();
}

void FrameBuilder::add_memory(std::uint64_t address, std::span<const std::uint8_t> bytes) {
    do {
        const std::size_t n = std::min(bytes.size(), kMaxMemoryBlock);
        std::uint8_t* p = append(kMemoryBlockHeaderSize + n);
        p = store_memory_header(p, address, static_cast<std::uint16_t>(n));
        if (n) std::memcpy(p, bytes.data(), n);
        address += n;
        bytes = bytes.subspan(n);
    } while (!bytes.empty());
}

void FrameBuilder::add_variable(std::uint32_t number, std::int64_t value) {
    store_variable_block(append(kVariableBlockSize), number, value);
}

void FrameBuilder::add_static_data(std::span<const std::uint8_t> data) {
    const std::size_t n = std::min(data.size(), kMaxStaticData);
    std::uint8_t* p = append(kStaticDataBlockHeaderSize + n);
    p = store_static_data_header(p, static_cast<std::uint16_t>(n));
    if (n) std::memcpy(p, data.data(), n);
}

std::uint16_t FrameView::tracepoint() const {
    return frame_tracepoint(frame_.data());
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
    const std::size_t end = std::min(frame_.size(), kFrameHeaderSize + frame_length(frame_.data()));
    if (pos >= end) return std::nullopt;
    const std::uint8_t* block = frame_.data() + pos;
    const std::size_t left = end - pos;
    FrameBlock b;
    b.type = static_cast<char>(block[0]);
    std::size_t size = 0;
    if (b.type == kRegistersBlock) {
        size = registers_block_size(register_block_size_);
        if (left < size) return std::nullopt;
        b.data = frame_.subspan(pos + 1, register_block_size_);
    } else if (b.type == kMemoryBlock) {
        if (left < kMemoryBlockHeaderSize) return std::nullopt;
        b.address = memory_block_address(block);
        const std::size_t n = memory_block_length(block);
        size = kMemoryBlockHeaderSize + n;
        if (left < size) return std::nullopt;
        b.data = frame_.subspan(pos + kMemoryBlockHeaderSize, n);
    } else if (b.type == kVariableBlock) {
        size = kVariableBlockSize;
        if (left < size) return std::nullopt;
        b.variable = variable_block_number(block);
        b.value = variable_block_value(block);
    } else if (b.type == kStaticDataBlock) {
        if (left < kStaticDataBlockHeaderSize) return std::nullopt;
        const std::size_t n = static_data_block_length(block);
        size = kStaticDataBlockHeaderSize + n;
        if (left < size) return std::nullopt;
        b.data = frame_.subspan(pos + kStaticDataBlockHeaderSize, n);
    } else {
        return std::nullopt;
    }
    b.encoded = frame_.subspan(pos, size);
    pos += size;
    return b;
}

std::optional<std::span<const std::uint8_t>> FrameView::registers() const {
    std::optional<std::span<const std::uint8_t>> out;
    for (const FrameBlock& b : blocks())
        if (b.type == kRegistersBlock) out = b.data;
    return out;
}

std::size_t FrameView::read_memory(std::uint64_t address, std::span<std::uint8_t> out) const {
    // Copy every block's part of the request in frame order, so later blocks overwrite
    // earlier ones, and remember which parts were covered.
    const std::uint64_t want = out.size();
    if (want == 0) return 0; // (an empty span's data() may be null: no memcpy to it)
    std::vector<std::pair<std::uint64_t, std::uint64_t>> covered; // offsets [begin, end)
    for (const FrameBlock& b : blocks()) {
        if (b.type != kMemoryBlock || b.data.empty()) continue;
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

std::span<const std::uint8_t> FrameView::static_data() const {
    for (const FrameBlock& b : blocks())
        if (b.type == kStaticDataBlock) return b.data;
    return {};
}

std::optional<std::int64_t> FrameView::variable(std::uint32_t number) const {
    std::optional<std::int64_t> out;
    for (const FrameBlock& b : blocks())
        if (b.type == kVariableBlock && b.variable == number) out = b.value;
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
        if (b.type == kMemoryBlock) {
            if (run && run->first + run->second == b.address) {
                run->second += b.data.size();
            } else {
                flush();
                run.emplace(b.address, b.data.size());
            }
        } else if (b.type == kVariableBlock) {
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
