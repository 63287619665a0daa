// qXfer reads: a document served in chunks at the offsets gdb asks for.
#pragma once
#include "base/result.hpp"
#include <functional>
#include <string>
#include <string_view>

namespace tpagent::server {

class Session;

// A document made at offset 0 and kept for the reads of its other chunks: for what must not
// change between them (a branch trace's delta is read once).
std::string cached_xfer(Session& s, std::string_view object, std::string_view args,
                        const std::function<Result<std::string>(const std::string& annex)>& make);

} // namespace tpagent::server
