#include "tools/tracefile/trace_file.hpp"

#include "tools/tracefile/file_error.hpp"
#include "tools/tracefile/frame_section.hpp"
#include "tools/tracefile/text_section.hpp"
#include "trace/frame_format.hpp"
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <memory>

namespace tpagent::tracefile {

std::optional<std::span<const std::uint8_t>> Frame::registers() const {
    std::optional<std::span<const std::uint8_t>> out;
    for (const trace::FrameBlock& b : blocks)
        if (b.type == 'R') out = b.data;
    return out;
}

std::optional<std::int64_t> Frame::variable(std::uint32_t number) const {
    std::optional<std::int64_t> out;
    for (const trace::FrameBlock& b : blocks)
        if (b.type == 'V' && b.variable == number) out = b.value;
    return out;
}

const trace::Tracepoint* TraceFile::find_tracepoint(std::uint32_t number) const {
    for (const trace::Tracepoint& tp : tracepoints_)
        if (tp.definition.key.number == number) return &tp;
    return nullptr;
}

const TraceVariable* TraceFile::find_variable(std::uint32_t number) const {
    for (const TraceVariable& v : variables_)
        if (v.number == number) return &v;
    return nullptr;
}

std::optional<std::uint32_t> TraceFile::timestamp_variable() const {
    for (const TraceVariable& v : variables_)
        if (v.builtin && v.name == "trace_timestamp") return v.number;
    return std::nullopt;
}

std::optional<std::uint64_t> TraceFile::frame_pc(const Frame& frame) const {
    if (layout_ && layout_->pc())
        if (auto block = frame.registers())
            if (auto pc = register_value(*layout_->pc(), *block)) return pc;
    std::optional<std::uint64_t> address;
    for (const trace::Tracepoint& tp : tracepoints_) {
        if (tp.definition.key.number != frame.tracepoint) continue;
        if (address) return std::nullopt; // several locations: cannot tell which
        address = tp.definition.key.address;
    }
    return address;
}

class TraceFileParser {
  public:
    static Result<TraceFile> parse(std::vector<std::uint8_t> bytes) {
        TraceFile file;
        file.bytes_ = std::move(bytes);
        std::span<const std::uint8_t> data(file.bytes_);
        std::size_t checked = std::min(data.size(), kMagic.size());
        for (std::size_t i = 0; i < checked; ++i)
            if (data[i] != static_cast<std::uint8_t>(kMagic[i]))
                return file_error(i, "not a trace file (header is not \"\\x7fTRACE0\\n\")");
        if (data.size() < kMagic.size())
            return file_error(data.size(), "file ends inside the header");

        auto text = parse_text_section(data);
        if (!text) return text.error();
        file.register_block_size_ = text->register_block_size;
        file.status_ = std::move(text->status);
        file.tracepoints_ = std::move(text->tracepoints);
        file.variables_ = std::move(text->variables);
        file.target_description_ = std::move(text->target_description);
        file.layout_ = std::move(text->layout);
        file.frame_section_offset_ = text->end;

        FrameSection frames = parse_frame_section(data, text->end, file.register_block_size_);
        file.frames_ = std::move(frames.frames);
        file.damage_ = std::move(frames.damage);
        return file;
    }
};

Result<TraceFile> parse_trace_file(std::vector<std::uint8_t> bytes) {
    return TraceFileParser::parse(std::move(bytes));
}

Result<TraceFile> read_trace_file(const std::string& path) {
    auto fail = [&](ErrorCode code) {
        return make_error(code, fmt::format("{}: {}", path, std::strerror(errno)));
    };
    std::unique_ptr<std::FILE, int (*)(std::FILE*)> f(std::fopen(path.c_str(), "rb"), &std::fclose);
    if (!f) return fail(errno == ENOENT ? ErrorCode::NotFound : ErrorCode::SystemError);
    std::vector<std::uint8_t> bytes;
    std::uint8_t chunk[65536];
    // Read to the end rather than trusting a size taken earlier: pipes and growing files.
    for (;;) {
        std::size_t n = std::fread(chunk, 1, sizeof chunk, f.get());
        bytes.insert(bytes.end(), chunk, chunk + n);
        if (n < sizeof chunk) break;
    }
    if (std::ferror(f.get())) return fail(ErrorCode::SystemError);
    return parse_trace_file(std::move(bytes));
}

namespace {
// A text section is tens of KiB (the target description); a file whose first 16 MiB hold no
// end of it is not one to read as a trace.
constexpr std::size_t kMaxTextSection = 16u << 20;

std::size_t text_section_end(std::span<const std::uint8_t> bytes, std::size_t from = 0) {
    const std::string_view text(reinterpret_cast<const char*>(bytes.data()), bytes.size());
    const std::size_t end = text.find("\n\n", from);
    return end == std::string_view::npos ? end : end + 2;
}
} // namespace

Result<std::optional<TraceFile>> parse_trace_file_head(std::span<const std::uint8_t> bytes) {
    const std::size_t end = text_section_end(bytes);
    if (end == std::string_view::npos) return std::optional<TraceFile>();
    std::vector<std::uint8_t> head(bytes.begin(), bytes.begin() + static_cast<long>(end));
    head.insert(head.end(), std::begin(trace::kEndOfFrames), std::end(trace::kEndOfFrames));
    auto file = parse_trace_file(std::move(head));
    if (!file) return file.error();
    return std::optional<TraceFile>(std::move(*file));
}

Result<TraceFile> read_trace_file_head(const std::string& path) {
    std::unique_ptr<std::FILE, int (*)(std::FILE*)> f(std::fopen(path.c_str(), "rb"), &std::fclose);
    if (!f)
        return make_error(ErrorCode::SystemError,
                          fmt::format("{}: {}", path, std::strerror(errno)));
    std::vector<std::uint8_t> bytes;
    std::uint8_t chunk[65536];
    while (bytes.size() < kMaxTextSection) {
        const std::size_t n = std::fread(chunk, 1, sizeof chunk, f.get());
        if (n == 0) break;
        const std::size_t from = bytes.empty() ? 0 : bytes.size() - 1;
        bytes.insert(bytes.end(), chunk, chunk + n);
        if (text_section_end(bytes, from) != std::string_view::npos) break;
    }
    auto head = parse_trace_file_head(bytes);
    if (!head) return make_error(head.error().code, fmt::format("{}: {}", path, head.error().text));
    if (!*head)
        return make_error(ErrorCode::BadInput,
                          fmt::format("{}: its text section does not end (no blank line)", path));
    return std::move(**head);
}

} // namespace tpagent::tracefile
