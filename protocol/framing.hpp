// RSP framing: `$payload#cs`, `+`/`-` acks, the 0x03 interrupt byte, `}` escapes, run-length
// encoding. Pure: bytes in, events out; the transport does the I/O.
#pragma once
#include <cstddef>
#include <cstdint>
#include <span>
#include <string>
#include <string_view>
#include <vector>

namespace tpagent::protocol {

struct FrameEvent {
    enum class Kind {
        Packet,      // payload holds the unescaped packet data
        Ack,         // '+'
        Nack,        // '-': resend the last packet
        Interrupt,   // 0x03 outside a packet
        BadChecksum, // payload holds the (unescaped) data that failed the check
        Oversize,    // the packet was longer than the declared PacketSize; data dropped
    };
    Kind kind;
    std::string payload;
};

// Byte-fed decoder: accepts input split across reads or several packets per read, never blocks.
class PacketDecoder {
  public:
    explicit PacketDecoder(std::size_t max_payload) : max_payload_(max_payload) {}

    void feed(std::span<const std::uint8_t> bytes, std::vector<FrameEvent>& out);
    void feed(std::string_view bytes, std::vector<FrameEvent>& out) {
        feed(std::span(reinterpret_cast<const std::uint8_t*>(bytes.data()), bytes.size()), out);
    }
    std::size_t max_payload() const { return max_payload_; }

  private:
    enum class State { Idle, Payload, Checksum1, Checksum2 };
    void start_packet();
    void finish_packet(std::vector<FrameEvent>& out);

    std::size_t max_payload_;
    State state_ = State::Idle;
    std::string payload_;
    std::uint8_t sum_ = 0;
    int received_sum_ = 0;
    bool escape_pending_ = false;
    bool oversize_ = false;
    bool bad_digit_ = false;
};

std::uint8_t checksum(std::string_view data);

// "$" + data + "#" + checksum; `data` must already be escaped/encoded.
std::string frame_packet(std::string_view data);
// A notification (RSP "Notification Packets"): as a packet, with '%' for '$'; never acked.
std::string frame_notification(std::string_view data);

// Escapes the bytes the RSP reserves ('#', '$', '}', '*') as '}' + (byte ^ 0x20).
std::string escape_binary(std::span<const std::uint8_t> bytes);
inline std::string escape_binary(std::string_view bytes) {
    return escape_binary(
        std::span(reinterpret_cast<const std::uint8_t*>(bytes.data()), bytes.size()));
}

// Run-length encodes runs of hex digits and 'x' (the only place long runs occur: register and
// memory dumps). Other bytes are left alone so escapes are never split.
std::string run_length_encode(std::string_view data);

} // namespace tpagent::protocol
