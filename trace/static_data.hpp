// `$_sdata` of a static tracepoint at an SDT marker: the marker's arguments as text, as gdb
// shows the S block's bytes: "arg1=5 arg2=-1 arg3=0x7ffc0010 arg4=?" ('?': not collected),
// NUL-terminated as gdbserver's. Signed arguments in decimal, unsigned 8-byte ones (pointers,
// sizes) in hex, other unsigned ones in decimal.
//
// Freestanding: the in-process collector writes the same text for fast static tracepoints.
#pragma once
#include <cstddef>
#include <cstdint>

namespace tpagent::trace {

class StaticDataWriter {
  public:
    // Writes into [out, out + room); room should be at least 1 (the NUL).
    StaticDataWriter(char* out, std::size_t room) : out_(out), room_(room) {}

    void argument(std::uint64_t value, std::uint8_t size, bool is_signed) {
        name();
        if (is_signed && static_cast<std::int64_t>(value) < 0) {
            put('-');
            decimal(0 - value);
        } else if (!is_signed && size == 8) {
            put('0');
            put('x');
            hex(value);
        } else {
            decimal(value);
        }
    }
    void unknown() {
        name();
        put('?');
    }
    // Ends the text; the bytes written, the NUL included (0 when room was 0).
    std::size_t finish() {
        if (room_ == 0) return 0;
        if (used_ == room_) --used_; // the last character gives way to the NUL
        out_[used_++] = '\0';
        return used_;
    }

  private:
    void put(char c) {
        if (used_ + 1 < room_) out_[used_++] = c; // one byte stays for the NUL
    }
    void name() {
        if (count_ > 0) put(' ');
        ++count_;
        put('a');
        put('r');
        put('g');
        decimal(count_);
        put('=');
    }
    void decimal(std::uint64_t v) {
        char digits[20];
        int n = 0;
        do {
            digits[n++] = static_cast<char>('0' + v % 10);
            v /= 10;
        } while (v != 0);
        while (n > 0)
            put(digits[--n]);
    }
    void hex(std::uint64_t v) {
        int shift = 60;
        while (shift > 0 && ((v >> shift) & 0xf) == 0)
            shift -= 4;
        for (; shift >= 0; shift -= 4)
            put("0123456789abcdef"[(v >> shift) & 0xf]);
    }

    char* out_;
    std::size_t room_;
    std::size_t used_ = 0;
    unsigned count_ = 0;
};

} // namespace tpagent::trace
