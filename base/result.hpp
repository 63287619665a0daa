// Errors as values: every fallible step at a packet boundary returns Result<T>.
#pragma once
#include <cstdint>
#include <string>
#include <utility>
#include <variant>

namespace tpagent {

// Error codes sent as `E NN`; the table of meanings is in README.md ("Error replies").
enum class ErrorCode : std::uint8_t {
    BadPacket = 0x01,     // malformed arguments
    BadInput = BadPacket, // the same outside the wire: a malformed file or command line
    NoProcess = 0x02,     // no inferior / no such thread
    MemoryAccess = 0x03,  // memory could not be read or written
    NotAllowed = 0x04,    // request not valid in the current state
    TooLarge = 0x05,      // packet or argument exceeds a bound
    NotFound = 0x06,      // named thing does not exist (register, tracepoint, file)
    SystemError = 0x07,   // a system call failed (text carries errno's message)
    Unsupported = 0x08,   // understood, but not supported here
    BadBytecode = 0x09,   // agent expression rejected by the validator
    BadTracepoint = 0x0a, // tracepoint definition rejected
};

struct Error {
    ErrorCode code = ErrorCode::BadPacket;
    std::string text;
};

template <typename T> class Result {
  public:
    Result(T value) : v_(std::move(value)) {}
    Result(Error e) : v_(std::move(e)) {}

    bool ok() const { return v_.index() == 0; }
    explicit operator bool() const { return ok(); }
    T& value() { return std::get<0>(v_); }
    const T& value() const { return std::get<0>(v_); }
    T& operator*() { return value(); }
    const T& operator*() const { return value(); }
    T* operator->() { return &value(); }
    const T* operator->() const { return &value(); }
    const Error& error() const { return std::get<1>(v_); }

  private:
    std::variant<T, Error> v_;
};

struct Unit {};
using Status = Result<Unit>;
inline Status ok_status() {
    return Unit{};
}

inline Error make_error(ErrorCode code, std::string text) {
    return Error{code, std::move(text)};
}

} // namespace tpagent
