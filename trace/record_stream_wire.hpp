// The record stream's wire format (--record-host on the board, `tpdump record` on the host): a
// recording's file operations sent over TCP, so that the host makes the same files the board
// would have made in a folder. Every operation names its file and offset, so applying one twice
// changes nothing: after a link cut the host says the last operation it has kept, and the board
// sends again from the next one.
//
//   board → host, at connect: Hello   "TPRECv1\n" stream:u64 oldest:u64 (the oldest operation
//                                      the board still holds)
//   host → board:              Resume  "TPRECr1\n" stream:u64 applied:u64 (the last operation
//                                      of that stream it has kept; 0: none)
//   board → host, then:        Op      kind:u64 seq:u64 file:u64 offset:u64 length:u64 bytes
//   host → board, then:        Ack     applied:u64 (the board forgets operations up to it)
//
// All numbers little-endian. Operations are numbered from 1 in a stream; a stream is one
// tpagent process (its id is new at each start).
#pragma once
#include "base/result.hpp"
#include <array>
#include <cstdint>
#include <span>
#include <string_view>

namespace tpagent::trace {

enum class RecordOpKind : std::uint64_t {
    Create = 1, // a file begins, empty
    Write = 2,  // `bytes` at `offset` of a file (appended, or its status line restated)
    End = 3,    // a file ended: synced
    Remove = 4, // a file removed (past the files kept, or abandoned with no frame)
};

struct RecordOpHeader {
    RecordOpKind kind{};
    std::uint64_t seq = 0, file = 0, offset = 0, length = 0;
};

inline constexpr std::size_t kRecordHelloSize = 24;
inline constexpr std::size_t kRecordOpHeaderSize = 40;
inline constexpr std::size_t kRecordAckSize = 8;
// The most one Write carries: a batch of frames (1 MiB) with a frame over it, or a text section
// with many tracepoints. More is a broken or hostile peer.
inline constexpr std::uint64_t kRecordMaxOpBytes = 64u << 20;
// No file reaches this (--record-size is at most 1 TiB, and a file ends once past it): a
// write past it is refused.
inline constexpr std::uint64_t kRecordMaxFileBytes = std::uint64_t{1} << 41;

struct RecordHello {
    std::uint64_t stream = 0;
    std::uint64_t number = 0; // Hello: the oldest held; Resume: the last applied
};

std::array<std::uint8_t, kRecordHelloSize> encode_hello(const RecordHello& hello);
std::array<std::uint8_t, kRecordHelloSize> encode_resume(const RecordHello& resume);
Result<RecordHello> decode_hello(std::span<const std::uint8_t, kRecordHelloSize> bytes);
Result<RecordHello> decode_resume(std::span<const std::uint8_t, kRecordHelloSize> bytes);

std::array<std::uint8_t, kRecordOpHeaderSize> encode_op_header(const RecordOpHeader& op);
// An Error for an unknown kind, a length over kRecordMaxOpBytes (or a Create, End or Remove
// carrying bytes), or a write past kRecordMaxFileBytes.
Result<RecordOpHeader> decode_op_header(std::span<const std::uint8_t, kRecordOpHeaderSize> bytes);

std::array<std::uint8_t, kRecordAckSize> encode_ack(std::uint64_t applied);
std::uint64_t decode_ack(std::span<const std::uint8_t, kRecordAckSize> bytes);

} // namespace tpagent::trace
