// The trace-file frame format, the one definition every writer and reader uses: tpagent's
// frame builder and views (trace_frame.hpp), the in-process collector (inproc/collector.cpp),
// the in-process shared buffer's configuration (experiment/shared_buffer.*) and the trace-file
// reader (tools/tracefile/). It is also the trace buffer's format, so qTBuffer and tsave are plain
// copies.
//
// A frame is a 2-byte tracepoint number and a 4-byte data length, then blocks:
//   'R' + register block (the `g` packet layout, fixed size per target)
//   'M' + 8-byte address + 2-byte length + bytes
//   'V' + 4-byte variable number + 8-byte signed value
//   'S' + 2-byte length + static tracepoint data (`$_sdata`, gdbserver's block: gdb 13's
//       trace-file reader does not know it)
// Tracepoint number 0 ends a file's frames. Multi-byte fields are little-endian (the byte
// order of every target tpagent supports).
//
// Freestanding: the in-process library (built without exceptions, RTTI or vector registers,
// and with no C++ runtime) includes this header, so it holds only constants, fixed-width
// integers and trivial inline functions.
#pragma once
#include <cstddef>
#include <cstdint>

namespace tpagent::trace {

// Little-endian fields: one move on a little-endian host, bytes shifted on another.
template <class T> inline T load_le(const std::uint8_t* p) {
#if __BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__
    T v;
    __builtin_memcpy(&v, p, sizeof v);
    return v;
#else
    std::uint64_t v = 0;
    for (std::size_t i = 0; i < sizeof(T); ++i)
        v |= static_cast<std::uint64_t>(p[i]) << (8 * i);
    return static_cast<T>(v);
#endif
}
template <class T> inline std::uint8_t* store_le(std::uint8_t* p, T value) {
#if __BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__
    __builtin_memcpy(p, &value, sizeof value);
#else
    const auto v = static_cast<std::uint64_t>(value);
    for (std::size_t i = 0; i < sizeof(T); ++i)
        p[i] = static_cast<std::uint8_t>(v >> (8 * i));
#endif
    return p + sizeof(T);
}

// The frame header: tracepoint number (2 bytes), then the length of the blocks (4 bytes).
inline constexpr std::size_t kFrameHeaderSize = 2 + 4;
inline constexpr std::size_t kFrameLengthOffset = 2;

inline std::uint16_t frame_tracepoint(const std::uint8_t* frame) {
    return load_le<std::uint16_t>(frame);
}
inline std::uint32_t frame_length(const std::uint8_t* frame) {
    return load_le<std::uint32_t>(frame + kFrameLengthOffset);
}
inline void set_frame_length(std::uint8_t* frame, std::uint32_t length) {
    store_le<std::uint32_t>(frame + kFrameLengthOffset, length);
}
// Returns the first block's position.
inline std::uint8_t* store_frame_header(std::uint8_t* frame, std::uint16_t tracepoint,
                                        std::uint32_t length) {
    return store_le<std::uint32_t>(store_le<std::uint16_t>(frame, tracepoint), length);
}

// What ends a trace file's frames: tracepoint number 0, padded to 4 bytes as gdb writes it.
inline constexpr std::uint8_t kEndOfFrames[4] = {0, 0, 0, 0};

// Block types.
inline constexpr char kRegistersBlock = 'R';
inline constexpr char kMemoryBlock = 'M';
inline constexpr char kVariableBlock = 'V';
inline constexpr char kStaticDataBlock = 'S';

// The store_* functions write a block's type and fixed fields at p and return where its
// bytes (R, M) or the next block (V) go.

// R: the type, then the register bytes.
constexpr std::size_t registers_block_size(std::size_t register_bytes) {
    return 1 + register_bytes;
}
inline std::uint8_t* store_registers_header(std::uint8_t* p) {
    *p = static_cast<std::uint8_t>(kRegistersBlock);
    return p + 1;
}

// A block whose type byte is followed by two fixed fields, A then B: first() and second()
// read them, store() writes the type and both and returns what follows them.
template <char Type, class A, class B> struct TwoFieldBlock {
    static constexpr std::size_t kSize = 1 + sizeof(A) + sizeof(B);
    static A first(const std::uint8_t* block) { return load_le<A>(block + 1); }
    static B second(const std::uint8_t* block) { return load_le<B>(block + 1 + sizeof(A)); }
    static std::uint8_t* store(std::uint8_t* p, A a, B b) {
        *p = static_cast<std::uint8_t>(Type);
        return store_le<B>(store_le<A>(p + 1, a), b);
    }
};

// M: the type, the address (8 bytes), the length (2 bytes), then the bytes.
using MemoryBlockHeader = TwoFieldBlock<kMemoryBlock, std::uint64_t, std::uint16_t>;
inline constexpr std::size_t kMemoryBlockHeaderSize = MemoryBlockHeader::kSize;
inline constexpr std::size_t kMaxMemoryBlock = 0xffff; // the length field is 16 bits
inline constexpr auto memory_block_address = &MemoryBlockHeader::first;
inline constexpr auto memory_block_length = &MemoryBlockHeader::second;
inline constexpr auto store_memory_header = &MemoryBlockHeader::store;
// The most bytes the M blocks of a range of `length` bytes take (split at kMaxMemoryBlock).
constexpr std::uint64_t memory_blocks_bound(std::uint64_t length) {
    return length + kMemoryBlockHeaderSize * (length / kMaxMemoryBlock + 1);
}

// V: the type, the variable number (4 bytes), the value (8 bytes, signed).
using VariableBlock = TwoFieldBlock<kVariableBlock, std::uint32_t, std::int64_t>;
inline constexpr std::size_t kVariableBlockSize = VariableBlock::kSize;
inline constexpr auto variable_block_number = &VariableBlock::first;
inline constexpr auto variable_block_value = &VariableBlock::second;
inline constexpr auto store_variable_block = &VariableBlock::store;

// S: the type, the length (2 bytes), then the data.
inline constexpr std::size_t kStaticDataBlockHeaderSize = 1 + 2;
inline constexpr std::size_t kMaxStaticData = 0xffff;
inline std::uint16_t static_data_block_length(const std::uint8_t* block) {
    return load_le<std::uint16_t>(block + 1);
}
inline std::uint8_t* store_static_data_header(std::uint8_t* p, std::uint16_t length) {
    *p = static_cast<std::uint8_t>(kStaticDataBlock);
    return store_le<std::uint16_t>(p + 1, length);
}

} // namespace tpagent::trace
