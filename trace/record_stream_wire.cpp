// See record_stream_wire.hpp.
#include "trace/record_stream_wire.hpp"
#include <cstring>
#include <fmt/format.h>

namespace tpagent::trace {

namespace {
constexpr std::string_view kHelloMagic = "TPRECv1\n";
constexpr std::string_view kResumeMagic = "TPRECr1\n";

void put(std::uint8_t* at, std::uint64_t v) {
    for (int i = 0; i < 8; ++i)
        at[i] = static_cast<std::uint8_t>(v >> (8 * i));
}

std::uint64_t get(const std::uint8_t* at) {
    std::uint64_t v = 0;
    for (int i = 7; i >= 0; --i)
        v = (v << 8) | at[i];
    return v;
}

std::array<std::uint8_t, kRecordHelloSize> encode_greeting(std::string_view magic,
                                                           const RecordHello& h) {
    std::array<std::uint8_t, kRecordHelloSize> out{};
    std::memcpy(out.data(), magic.data(), 8);
    put(out.data() + 8, h.stream);
    put(out.data() + 16, h.number);
    return out;
}

Result<RecordHello> decode_greeting(std::string_view magic,
                                    std::span<const std::uint8_t, kRecordHelloSize> bytes) {
    if (std::memcmp(bytes.data(), magic.data(), 8) != 0)
        return make_error(ErrorCode::BadInput,
                          "not a record stream (tpagent --record-host) at the other end");
    return RecordHello{get(bytes.data() + 8), get(bytes.data() + 16)};
}
} // namespace

std::array<std::uint8_t, kRecordHelloSize> encode_hello(const RecordHello& hello) {
    return encode_greeting(kHelloMagic, hello);
}

std::array<std::uint8_t, kRecordHelloSize> encode_resume(const RecordHello& resume) {
    return encode_greeting(kResumeMagic, resume);
}

Result<RecordHello> decode_hello(std::span<const std::uint8_t, kRecordHelloSize> bytes) {
    return decode_greeting(kHelloMagic, bytes);
}

Result<RecordHello> decode_resume(std::span<const std::uint8_t, kRecordHelloSize> bytes) {
    return decode_greeting(kResumeMagic, bytes);
}

std::array<std::uint8_t, kRecordOpHeaderSize> encode_op_header(const RecordOpHeader& op) {
    std::array<std::uint8_t, kRecordOpHeaderSize> out{};
    put(out.data(), static_cast<std::uint64_t>(op.kind));
    put(out.data() + 8, op.seq);
    put(out.data() + 16, op.file);
    put(out.data() + 24, op.offset);
    put(out.data() + 32, op.length);
    return out;
}

Result<RecordOpHeader> decode_op_header(std::span<const std::uint8_t, kRecordOpHeaderSize> bytes) {
    RecordOpHeader op{static_cast<RecordOpKind>(get(bytes.data())), get(bytes.data() + 8),
                      get(bytes.data() + 16), get(bytes.data() + 24), get(bytes.data() + 32)};
    const auto kind = static_cast<std::uint64_t>(op.kind);
    if (kind < 1 || kind > 4)
        return make_error(ErrorCode::BadInput,
                          fmt::format("record stream: unknown operation {}", kind));
    if (op.length > (op.kind == RecordOpKind::Write ? kRecordMaxOpBytes : 0))
        return make_error(
            ErrorCode::TooLarge,
            fmt::format("record stream: operation {} carries {} bytes", op.seq, op.length));
    if (op.offset > kRecordMaxFileBytes || op.offset + op.length > kRecordMaxFileBytes)
        return make_error(
            ErrorCode::TooLarge,
            fmt::format("record stream: operation {} writes at {}, past 2 TiB", op.seq, op.offset));
    return op;
}

std::array<std::uint8_t, kRecordAckSize> encode_ack(std::uint64_t applied) {
    std::array<std::uint8_t, kRecordAckSize> out{};
    put(out.data(), applied);
    return out;
}

std::uint64_t decode_ack(std::span<const std::uint8_t, kRecordAckSize> bytes) {
    return get(bytes.data());
}

} // namespace tpagent::trace
