#include "tools/tracefile/text_section.hpp"

#include "protocol/hex.hpp"
#include "tools/tracefile/file_error.hpp"
#include "tools/tracefile/tracepoint_pieces.hpp"
#include <string_view>

namespace tpagent::tracefile {

namespace {

struct Line {
    std::size_t offset; // of the payload (after the keyword and space)
    std::string_view payload;
};

// Without a target description any register number is accepted in actions.
constexpr unsigned kAnyRegister = 0x10000;

std::optional<std::string_view> after_keyword(std::string_view line, std::string_view keyword) {
    if (line.size() > keyword.size() && line.substr(0, keyword.size()) == keyword &&
        line[keyword.size()] == ' ')
        return line.substr(keyword.size() + 1);
    return std::nullopt;
}

Result<std::size_t> parse_register_size(const Line& line) {
    auto size = protocol::parse_hex_u64(line.payload);
    if (!size) return file_error(line.offset, "R line: bad hex size");
    if (*size == 0 || *size > kMaxRegisterBlockSize)
        return file_error(line.offset,
                          fmt::format("R line: register block size 0x{:x} outside "
                                      "1..0x{:x}",
                                      *size, kMaxRegisterBlockSize),
                          ErrorCode::TooLarge);
    return static_cast<std::size_t>(*size);
}

// `<num>:<initial value>:<builtin 0|1>:<hex name>`
Result<TraceVariable> parse_variable(const Line& line) {
    auto fields = protocol::split(line.payload, ':');
    if (fields.size() != 4)
        return file_error(line.offset, "tsv line: expected <num>:<value>:<builtin>:<hexname>");
    auto number = protocol::parse_hex_u64(fields[0]);
    auto initial = protocol::parse_hex_i64(fields[1]);
    auto name = protocol::hex_to_text(fields[3]);
    if (!number || *number > 0xffffffff) return file_error(line.offset, "tsv line: bad number");
    if (!initial) return file_error(line.offset, "tsv line: bad initial value");
    if (fields[2] != "0" && fields[2] != "1")
        return file_error(line.offset, "tsv line: builtin flag must be 0 or 1");
    if (!name) return file_error(line.offset, "tsv line: bad hex name");
    return TraceVariable{static_cast<std::uint32_t>(*number), *initial, fields[2] == "1",
                         std::move(*name)};
}

struct Lines {
    std::vector<Line> registers, status, variables, tracepoints, tdesc;
    std::size_t end = 0;
};

Result<Lines> split_lines(std::span<const std::uint8_t> file) {
    std::string_view text(reinterpret_cast<const char*>(file.data()), file.size());
    Lines lines;
    std::size_t pos = kMagic.size();
    for (;;) {
        std::size_t newline = text.find('\n', pos);
        if (newline == std::string_view::npos)
            return file_error(pos, "text section ends without the empty line that closes it "
                                   "(file truncated?)");
        std::string_view line = text.substr(pos, newline - pos);
        if (line.empty()) {
            lines.end = newline + 1;
            return lines;
        }
        struct Kind {
            std::string_view keyword;
            std::vector<Line>* into;
        };
        for (Kind kind : {Kind{"R", &lines.registers}, Kind{"status", &lines.status},
                          Kind{"tsv", &lines.variables}, Kind{"tp", &lines.tracepoints},
                          Kind{"tdesc", &lines.tdesc}}) {
            if (auto payload = after_keyword(line, kind.keyword)) {
                kind.into->push_back({pos + kind.keyword.size() + 1, *payload});
                break;
            }
        }
        // gdb writes `tdesc ` for an empty XML line: keep it, it is part of the document.
        if (line == "tdesc") lines.tdesc.push_back({pos + 5, {}});
        pos = newline + 1;
    }
}

} // namespace

Result<TextSection> parse_text_section(std::span<const std::uint8_t> file) {
    auto lines = split_lines(file);
    if (!lines) return lines.error();
    TextSection out;
    out.end = lines->end;

    if (lines->registers.size() > 1) return file_error(lines->registers[1].offset, "second R line");
    if (!lines->registers.empty()) {
        auto size = parse_register_size(lines->registers[0]);
        if (!size) return size.error();
        out.register_block_size = *size;
    }

    if (lines->status.size() > 1) return file_error(lines->status[1].offset, "second status line");
    if (!lines->status.empty()) {
        auto status = parse_trace_status(lines->status[0].payload);
        if (!status) return file_error(lines->status[0].offset, status.error().text);
        out.status = std::move(*status);
    }

    for (const Line& line : lines->variables) {
        auto variable = parse_variable(line);
        if (!variable) return variable.error();
        std::erase_if(out.variables,
                      [&](const TraceVariable& v) { return v.number == variable->number; });
        out.variables.push_back(std::move(*variable));
    }

    for (const Line& line : lines->tdesc) {
        out.target_description += line.payload;
        out.target_description += '\n';
    }
    if (!lines->tdesc.empty()) {
        auto layout = parse_register_layout(out.target_description);
        if (!layout) return file_error(lines->tdesc[0].offset, layout.error().text);
        out.layout = std::move(*layout);
        if (!out.register_block_size && out.layout->block_size() > 0 &&
            out.layout->block_size() <= kMaxRegisterBlockSize)
            out.register_block_size = out.layout->block_size();
    }

    TracepointPieces pieces(
        out.layout && !out.layout->registers.empty() ? out.layout->register_count() : kAnyRegister);
    for (const Line& line : lines->tracepoints) {
        auto added = pieces.add(line.payload);
        if (!added) return file_error(line.offset, "tp line: " + added.error().text);
    }
    out.tracepoints = pieces.take();
    return out;
}

} // namespace tpagent::tracefile
