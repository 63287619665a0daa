#include "protocol/hex.hpp"
#include <cctype>

namespace tpagent::protocol {

namespace {
constexpr char kDigits[] = "0123456789abcdef";
}

int hex_digit_value(char c) {
    if (c >= '0' && c <= '9') return c - '0';
    if (c >= 'a' && c <= 'f') return c - 'a' + 10;
    if (c >= 'A' && c <= 'F') return c - 'A' + 10;
    return -1;
}

void append_hex(std::string& out, std::span<const std::uint8_t> bytes) {
    out.reserve(out.size() + bytes.size() * 2);
    for (std::uint8_t b : bytes) {
        out.push_back(kDigits[b >> 4]);
        out.push_back(kDigits[b & 0xf]);
    }
}

std::string to_hex(std::span<const std::uint8_t> bytes) {
    std::string out;
    append_hex(out, bytes);
    return out;
}

std::string to_hex(std::string_view text) {
    return to_hex(std::span(reinterpret_cast<const std::uint8_t*>(text.data()), text.size()));
}

Result<std::vector<std::uint8_t>> from_hex(std::string_view hex) {
    if (hex.size() % 2 != 0) return make_error(ErrorCode::BadPacket, "odd number of hex digits");
    std::vector<std::uint8_t> out(hex.size() / 2);
    for (std::size_t i = 0; i < out.size(); ++i) {
        int hi = hex_digit_value(hex[2 * i]);
        int lo = hex_digit_value(hex[2 * i + 1]);
        if (hi < 0 || lo < 0) return make_error(ErrorCode::BadPacket, "not a hex digit");
        out[i] = static_cast<std::uint8_t>(hi << 4 | lo);
    }
    return out;
}

Result<std::string> hex_to_text(std::string_view hex) {
    auto bytes = from_hex(hex);
    if (!bytes) return bytes.error();
    return std::string(bytes->begin(), bytes->end());
}

Result<std::uint64_t> parse_hex_u64(std::string_view digits) {
    if (digits.empty()) return make_error(ErrorCode::BadPacket, "missing hex number");
    // Leading zeros are allowed (gdb pads addresses), so count significant digits.
    std::size_t first = digits.find_first_not_of('0');
    if (first != std::string_view::npos && digits.size() - first > 16)
        return make_error(ErrorCode::BadPacket, "hex number too large");
    std::uint64_t value = 0;
    for (char c : digits) {
        int d = hex_digit_value(c);
        if (d < 0) return make_error(ErrorCode::BadPacket, "not a hex digit");
        value = value << 4 | static_cast<std::uint64_t>(d);
    }
    return value;
}

Result<std::int64_t> parse_hex_i64(std::string_view digits) {
    bool negative = !digits.empty() && digits.front() == '-';
    auto magnitude = parse_hex_u64(negative ? digits.substr(1) : digits);
    if (!magnitude) return magnitude.error();
    std::uint64_t v = negative ? ~*magnitude + 1 : *magnitude;
    return static_cast<std::int64_t>(v);
}

std::string hex_u64(std::uint64_t value) {
    char buf[16];
    int n = 0;
    do {
        buf[n++] = kDigits[value & 0xf];
        value >>= 4;
    } while (value != 0);
    return std::string(std::make_reverse_iterator(buf + n), std::make_reverse_iterator(buf));
}

std::string_view trim(std::string_view text) {
    while (!text.empty() && std::isspace(static_cast<unsigned char>(text.front())))
        text.remove_prefix(1);
    while (!text.empty() && std::isspace(static_cast<unsigned char>(text.back())))
        text.remove_suffix(1);
    return text;
}

std::vector<std::string_view> split(std::string_view text, char sep) {
    std::vector<std::string_view> out;
    std::size_t start = 0;
    while (true) {
        std::size_t pos = text.find(sep, start);
        if (pos == std::string_view::npos) {
            out.push_back(text.substr(start));
            return out;
        }
        out.push_back(text.substr(start, pos - start));
        start = pos + 1;
    }
}

} // namespace tpagent::protocol
