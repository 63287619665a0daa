// Serves a list of upload pieces one per reply, as qTfP/qTsP and qTfV/qTsV want: the `f`
// packet takes a fresh snapshot, every `s` packet the next piece, `l` once exhausted. A
// snapshot keeps the sequence consistent if the table changes between packets.
#pragma once
#include <cstddef>
#include <string>
#include <utility>
#include <vector>

namespace tpagent::trace {

class UploadCursor {
  public:
    UploadCursor() = default;
    explicit UploadCursor(std::vector<std::string> pieces) : pieces_(std::move(pieces)) {}

    // The next reply: a piece, or "l" after the last one (and on every call after that).
    std::string next() { return next_ < pieces_.size() ? pieces_[next_++] : std::string("l"); }
    bool done() const { return next_ >= pieces_.size(); }

  private:
    std::vector<std::string> pieces_;
    std::size_t next_ = 0;
};

} // namespace tpagent::trace
