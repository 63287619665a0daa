#include "protocol/framing.hpp"
#include "protocol/hex.hpp"

namespace tpagent::protocol {

std::uint8_t checksum(std::string_view data) {
    std::uint8_t sum = 0;
    for (char c : data)
        sum = static_cast<std::uint8_t>(sum + static_cast<std::uint8_t>(c));
    return sum;
}

std::string frame_packet(std::string_view data) {
    static constexpr char kDigits[] = "0123456789abcdef";
    std::uint8_t sum = checksum(data);
    std::string out;
    out.reserve(data.size() + 4);
    out.push_back('$');
    out.append(data);
    out.push_back('#');
    out.push_back(kDigits[sum >> 4]);
    out.push_back(kDigits[sum & 0xf]);
    return out;
}

std::string frame_notification(std::string_view data) {
    std::string out = frame_packet(data);
    out.front() = '%';
    return out;
}

std::string escape_binary(std::span<const std::uint8_t> bytes) {
    std::string out;
    out.reserve(bytes.size() + bytes.size() / 16);
    for (std::uint8_t b : bytes) {
        if (b == '#' || b == '$' || b == '}' || b == '*') {
            out.push_back('}');
            out.push_back(static_cast<char>(b ^ 0x20));
        } else {
            out.push_back(static_cast<char>(b));
        }
    }
    return out;
}

namespace {
bool run_encodable(char c) {
    return hex_digit_value(c) >= 0 || c == 'x';
}
} // namespace

std::string run_length_encode(std::string_view data) {
    // A repeat count n is sent as char(n + 29); n in 3..97, except 6 and 7, whose characters
    // would be '#' and '$'. Runs shorter than 4 characters are cheaper sent as they are.
    constexpr std::size_t kMaxRepeat = 126 - 29;
    std::string out;
    out.reserve(data.size());
    std::size_t i = 0;
    while (i < data.size()) {
        char c = data[i];
        std::size_t run = 1;
        while (i + run < data.size() && data[i + run] == c)
            ++run;
        if (!run_encodable(c)) {
            out.append(run, c);
            i += run;
            continue;
        }
        i += run;
        while (run > 0) {
            std::size_t repeats = run - 1; // copies after the first
            if (repeats < 3) {
                out.append(run, c);
                break;
            }
            if (repeats > kMaxRepeat) repeats = kMaxRepeat;
            if (repeats == 6 || repeats == 7) repeats = 5;
            out.push_back(c);
            out.push_back('*');
            out.push_back(static_cast<char>(repeats + 29));
            run -= repeats + 1;
        }
    }
    return out;
}

void PacketDecoder::start_packet() {
    state_ = State::Payload;
    payload_.clear();
    sum_ = 0;
    escape_pending_ = false;
    oversize_ = false;
    bad_digit_ = false;
}

void PacketDecoder::finish_packet(std::vector<FrameEvent>& out) {
    state_ = State::Idle;
    if (oversize_) {
        out.push_back({FrameEvent::Kind::Oversize, {}});
    } else if (bad_digit_ || received_sum_ != sum_) {
        out.push_back({FrameEvent::Kind::BadChecksum, std::move(payload_)});
    } else {
        out.push_back({FrameEvent::Kind::Packet, std::move(payload_)});
    }
    payload_.clear();
}

void PacketDecoder::feed(std::span<const std::uint8_t> bytes, std::vector<FrameEvent>& out) {
    for (std::uint8_t b : bytes) {
        char c = static_cast<char>(b);
        switch (state_) {
        case State::Idle:
            if (c == '$')
                start_packet();
            else if (c == '+')
                out.push_back({FrameEvent::Kind::Ack, {}});
            else if (c == '-')
                out.push_back({FrameEvent::Kind::Nack, {}});
            else if (b == 0x03)
                out.push_back({FrameEvent::Kind::Interrupt, {}});
            // Anything else between packets is line noise: ignored.
            break;
        case State::Payload:
            if (c == '#') {
                state_ = State::Checksum1;
                break;
            }
            if (c == '$') { // a new packet start abandons the unfinished one
                start_packet();
                break;
            }
            sum_ = static_cast<std::uint8_t>(sum_ + b);
            if (oversize_) break;
            if (escape_pending_) {
                payload_.push_back(static_cast<char>(b ^ 0x20));
                escape_pending_ = false;
            } else if (c == '}') {
                escape_pending_ = true;
            } else {
                payload_.push_back(c);
            }
            if (payload_.size() > max_payload_) {
                oversize_ = true;
                payload_.clear();
            }
            break;
        case State::Checksum1: {
            int d = hex_digit_value(c);
            bad_digit_ = d < 0;
            received_sum_ = (d < 0 ? 0 : d) << 4;
            state_ = State::Checksum2;
            break;
        }
        case State::Checksum2: {
            int d = hex_digit_value(c);
            if (d < 0)
                bad_digit_ = true;
            else
                received_sum_ |= d;
            finish_packet(out);
            break;
        }
        }
    }
}

} // namespace tpagent::protocol
