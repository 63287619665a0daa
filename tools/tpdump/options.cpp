#include "tools/tpdump/options.hpp"

#include <charconv>
#include <fmt/format.h>
#include <string_view>

namespace tpagent::tpdump {

const char* const kHelp = R"(usage: tpdump [OPTIONS] FILE

Prints a trace file written by gdb's `tsave` or tpagent's `tsave -r`: status, trace state
variables, tracepoints with their actions and source, and every frame with its registers
(named from the file's target description), memory blocks and variable values.

options:
  --tracepoint N     only tracepoint N and its frames (repeatable)
  --frames A-B       only frames A to B (frame numbers as gdb's tfind counts them;
                     also A, A- and -B)
  --registers LIST   comma-separated register names to show, or `none`
                     (default: text shows every register of at most 8 bytes and the
                     wider ones that are not all zero; JSON shows all)
  --all-registers    text: also show wide registers that are all zero
  --disassemble      text: show agent expressions instruction by instruction
  --json             one JSON object per frame per line: frame, tracepoint, offset, pc,
                     registers, memory [{address, length, hex}], variables
  --perfetto         Chrome trace-event JSON for ui.perfetto.dev or chrome://tracing:
                     one track per tracepoint, one instant event per frame, timed by
                     $trace_timestamp when it was collected, else by frame order
  --html             one self-contained HTML page: tracepoints, a timeline of hits, a plot
                     of each collected value over time; click a hit to see its frame
  -h, --help         this text

exit status: 0 ok, 1 unreadable or malformed file (the message names the byte
offset), 2 bad usage

examples:
  tpdump trace.tf
  tpdump --tracepoint 2 --frames 0-9 trace.tf
  tpdump --json --registers rip,rsp trace.tf | jq .memory
  tpdump --perfetto trace.tf > trace.json      # then open it in ui.perfetto.dev
  tpdump --html trace.tf > trace.html
)";

namespace {

Error usage(std::string text) {
    return make_error(ErrorCode::BadInput, std::move(text));
}

std::optional<std::size_t> parse_count(std::string_view text) {
    std::size_t value = 0;
    auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), value);
    if (text.empty() || ec != std::errc() || end != text.data() + text.size()) return std::nullopt;
    return value;
}

Status parse_frames(std::string_view text, Options& options) {
    std::size_t dash = text.find('-');
    std::string_view first = text.substr(0, dash);
    std::string_view last = dash == std::string_view::npos ? first : text.substr(dash + 1);
    auto a = first.empty() ? std::optional<std::size_t>(0) : parse_count(first);
    auto b = last.empty() ? std::optional<std::size_t>(SIZE_MAX) : parse_count(last);
    if (!a || !b || *a > *b || (first.empty() && last.empty()))
        return usage(fmt::format("--frames: expected A-B with A <= B, not '{}'", text));
    options.first_frame = *a;
    options.last_frame = *b;
    return ok_status();
}

} // namespace

Result<Options> parse_options(std::span<char* const> args) {
    Options options;
    bool format_given = false;
    auto set_format = [&](OutputFormat f) -> Status {
        if (format_given) return usage("--json, --perfetto and --html exclude each other");
        format_given = true;
        options.format = f;
        return ok_status();
    };
    for (std::size_t i = 0; i < args.size(); ++i) {
        std::string_view arg = args[i];
        std::string_view value;
        // Options with a value accept `--opt VALUE` and `--opt=VALUE`.
        auto take_value = [&](std::string_view name) -> bool {
            if (arg == name) {
                if (i + 1 >= args.size()) return false;
                value = args[++i];
                return true;
            }
            if (arg.size() > name.size() && arg.substr(0, name.size()) == name &&
                arg[name.size()] == '=') {
                value = arg.substr(name.size() + 1);
                return true;
            }
            return false;
        };
        for (std::string_view name : {"--tracepoint", "--frames", "--registers"})
            if (arg == name && i + 1 >= args.size())
                return usage(fmt::format("{} needs a value", name));
        if (arg == "-h" || arg == "--help") {
            options.help = true;
        } else if (arg == "--json") {
            if (auto s = set_format(OutputFormat::Json); !s) return s.error();
        } else if (arg == "--perfetto") {
            if (auto s = set_format(OutputFormat::Perfetto); !s) return s.error();
        } else if (arg == "--html") {
            if (auto s = set_format(OutputFormat::Html); !s) return s.error();
        } else if (arg == "--all-registers") {
            options.all_registers = true;
        } else if (arg == "--disassemble") {
            options.disassemble = true;
        } else if (take_value("--tracepoint")) {
            auto n = parse_count(value);
            if (!n || *n == 0 || *n > 0xffff)
                return usage(
                    fmt::format("--tracepoint: expected a number 1..65535, not '{}'", value));
            options.tracepoints.insert(static_cast<std::uint32_t>(*n));
        } else if (take_value("--frames")) {
            if (auto s = parse_frames(value, options); !s) return s.error();
        } else if (take_value("--registers")) {
            options.registers.clear();
            std::size_t pos = 0;
            while (pos <= value.size()) {
                std::size_t comma = std::min(value.find(',', pos), value.size());
                if (comma > pos) options.registers.emplace_back(value.substr(pos, comma - pos));
                pos = comma + 1;
            }
            if (options.registers.empty()) return usage("--registers: no names given");
        } else if (arg.size() > 1 && arg[0] == '-') {
            return usage(fmt::format("unknown option '{}'", arg));
        } else if (!options.path.empty()) {
            return usage("more than one file given");
        } else {
            options.path = std::string(arg);
        }
    }
    if (!options.help && options.path.empty()) return usage("no trace file given");
    return options;
}

} // namespace tpagent::tpdump
