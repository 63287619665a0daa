// A packet's arguments split and parsed from a schema (QEMU's GdbCmdParseEntry habit): a packet
// table entry names its arguments' kinds, and they are parsed before its handler runs.
#pragma once
#include "base/result.hpp"
#include "protocol/requests.hpp"
#include <cstdint>
#include <string>
#include <string_view>
#include <variant>
#include <vector>

namespace tpagent::protocol {

// A schema has one letter for each argument, with the separators between them as the packet
// has them ("s,x,x" for vFile:open's "NAME,FLAGS,MODE"):
//   x  a hex number (parse_hex_u64)            -> number(i)
//   t  a thread id (parse_thread_id)           -> thread(i)
//   s  hex-encoded text (hex_to_text)          -> text(i)
//   c  one character, with no separator after  -> character(i) (H's g or c)
// An argument runs to the separator after it in the schema, the last one to the packet's end.
class PacketArgs {
  public:
    static Result<PacketArgs> parse(std::string_view schema, std::string_view args);

    std::uint64_t number(std::size_t i) const { return std::get<std::uint64_t>(values_.at(i)); }
    const ThreadId& thread(std::size_t i) const { return std::get<ThreadId>(values_.at(i)); }
    const std::string& text(std::size_t i) const { return std::get<std::string>(values_.at(i)); }
    char character(std::size_t i) const { return std::get<char>(values_.at(i)); }

  private:
    std::vector<std::variant<std::uint64_t, ThreadId, std::string, char>> values_;
};

} // namespace tpagent::protocol
