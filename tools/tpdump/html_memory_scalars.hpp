// The integers in a frame's memory blocks that the HTML report plots.
#pragma once
#include <cstdint>
#include <span>
#include <string>
#include <string_view>
#include <vector>

namespace tpagent::tpdump {

struct MemoryScalar {
    std::string label; // the source expression, an element of it, or *(intN*)address
    std::int64_t value;
    std::size_t size; // bytes: 1, 2, 4 or 8 (a pointer has the size of one)
};

// A named block of 1, 2, 4 or 8 bytes is one little-endian signed integer; a named `x@N`
// block whose size is N elements of 1, 2, 4 or 8 bytes is N of them (`a[k]@N` gives a[k] to
// a[k+N-1]); an unnamed block of 1, 2, 4 or 8 bytes is labelled by address. Other blocks
// (structures, strings) give nothing.
std::vector<MemoryScalar> memory_scalars(std::string_view name, std::uint64_t address,
                                         std::span<const std::uint8_t> bytes);

} // namespace tpagent::tpdump
