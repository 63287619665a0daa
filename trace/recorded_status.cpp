// See recorded_status.hpp.
#include "trace/recorded_status.hpp"
#include "protocol/hex.hpp"
#include <fmt/format.h>
#include <vector>

namespace tpagent::trace {

namespace {
constexpr std::string_view kPad = ";rpad:";

// `payload` then the pad field up to the width; nothing if it does not fit.
std::optional<std::string> padded(std::string payload, std::size_t width) {
    if (payload.size() + kPad.size() > width) return std::nullopt;
    payload += kPad;
    payload.append(width - payload.size(), '0');
    return payload;
}

std::string encoded(const protocol::TraceStatus& status, const RecordingFields& f) {
    return protocol::encode_trace_status(status).substr(1) +
           fmt::format(";rfile:{:x};rfirst:{:x};rlost:{:x};rdropped:{:x};runwritten:{:x}", f.file,
                       f.first, f.lost, f.dropped, f.unwritten);
}
} // namespace

std::string recorded_status_payload(protocol::TraceStatus status, const RecordingFields& fields) {
    for (;;) {
        std::string payload = encoded(status, fields);
        if (auto line = padded(payload, kRecordedStatusWidth)) return std::move(*line);
        if (status.notes.empty() && status.user.empty()) // not reached: the rest is short
            return payload.substr(0, kRecordedStatusWidth);
        // Each character of a text takes two hex digits.
        const std::size_t excess = (payload.size() + kPad.size() - kRecordedStatusWidth + 1) / 2;
        std::string& text = status.notes.empty() ? status.user : status.notes;
        text.resize(text.size() > excess ? text.size() - excess : 0);
    }
}

std::optional<std::string> restate_recorded_status(std::string_view payload, std::uint64_t frames,
                                                   std::string_view note) {
    const auto pad = payload.find(kPad);
    if (pad == std::string_view::npos) return std::nullopt;
    auto fields = protocol::split(payload.substr(0, pad), ';');
    bool has_frames = false;
    std::string notes;
    std::vector<std::string> kept;
    for (const auto field : fields) {
        if (field.starts_with("tframes:")) {
            kept.push_back(fmt::format("tframes:{:x}", frames));
            has_frames = true;
        } else if (field.starts_with("notes:")) {
            auto text = protocol::hex_to_text(field.substr(6));
            notes = text ? *text : std::string();
        } else {
            kept.push_back(std::string(field));
        }
    }
    if (!has_frames) return std::nullopt;
    auto joined = [&](std::string_view with_notes) {
        std::string out;
        for (const auto& field : kept)
            out += (out.empty() ? "" : ";") + field;
        return out + ";notes:" + protocol::to_hex(with_notes);
    };
    const std::string extended =
        notes.empty() ? std::string(note) : notes + "; " + std::string(note);
    if (auto line = padded(joined(extended), payload.size())) return line;
    return padded(joined(notes), payload.size());
}

} // namespace tpagent::trace
