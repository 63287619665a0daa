#include "protocol/packet_args.hpp"
#include "protocol/hex.hpp"
#include <fmt/format.h>

namespace tpagent::protocol {

Result<PacketArgs> PacketArgs::parse(std::string_view schema, std::string_view args) {
    PacketArgs out;
    std::size_t pos = 0;
    for (std::size_t i = 0; i < schema.size(); ++i) {
        const char kind = schema[i];
        if (kind == 'c') {
            if (pos >= args.size()) return make_error(ErrorCode::BadPacket, "missing argument");
            out.values_.emplace_back(args[pos++]);
            continue;
        }
        std::string_view field = args.substr(pos);
        pos = args.size();
        if (i + 1 < schema.size()) {
            const char separator = schema[++i];
            const std::size_t end = field.find(separator);
            if (end == std::string_view::npos)
                return make_error(ErrorCode::BadPacket, fmt::format("missing '{}'", separator));
            pos = static_cast<std::size_t>(field.data() - args.data()) + end + 1;
            field = field.substr(0, end);
        }
        switch (kind) {
        case 'x': {
            auto n = parse_hex_u64(field);
            if (!n) return n.error();
            out.values_.emplace_back(*n);
            break;
        }
        case 't': {
            auto id = parse_thread_id(field);
            if (!id) return id.error();
            out.values_.emplace_back(*id);
            break;
        }
        case 's': {
            auto text = hex_to_text(field);
            if (!text) return text.error();
            out.values_.emplace_back(std::move(*text));
            break;
        }
        default:
            return make_error(ErrorCode::BadPacket, fmt::format("schema letter '{}'", kind));
        }
    }
    return out;
}

} // namespace tpagent::protocol
