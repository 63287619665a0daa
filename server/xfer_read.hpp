// qXfer reads: a document served in chunks at the offsets gdb asks for.
#pragma once
#include "base/result.hpp"
#include <functional>
#include <optional>
#include <string>
#include <string_view>

namespace tpagent::server {

class Session;

// The qXfer document being read in chunks: made at offset 0, kept for its other chunks.
class XferDocumentCache {
  public:
    // Its data if it is `object`'s with `annex`, else nullptr.
    const std::string* find(std::string_view object, std::string_view annex) const {
        if (!document_ || document_->object != object || document_->annex != annex) return nullptr;
        return &document_->data;
    }
    const std::string& keep(std::string_view object, std::string_view annex, std::string data) {
        document_ = Document{std::string(object), std::string(annex), std::move(data)};
        return document_->data;
    }
    void drop() { document_.reset(); }

  private:
    struct Document {
        std::string object, annex, data;
    };
    std::optional<Document> document_;
};

// A document made at offset 0 and kept for the reads of its other chunks: for what must not
// change between them (a branch trace's delta is read once).
std::string cached_xfer(Session& s, std::string_view object, std::string_view args,
                        const std::function<Result<std::string>(const std::string& annex)>& make);

} // namespace tpagent::server
