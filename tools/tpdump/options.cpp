#include "tools/tpdump/options.hpp"

#include "protocol/hex.hpp"
#include <CLI/CLI.hpp>
#include <array>
#include <charconv>
#include <fmt/format.h>
#include <string_view>

#ifndef TPAGENT_VERSION
#error "TPAGENT_VERSION (the project version) must be defined"
#endif

namespace tpagent::tpdump {

namespace {

// The output formats other than text, one flag each; at most one may be given. A new
// format: its OutputFormat value, an entry here, its printer in main.
struct FormatFlag {
    const char* name;
    OutputFormat format;
    const char* help;
};
constexpr std::array kFormatFlags = {
    FormatFlag{"--json", OutputFormat::Json,
               "one JSON object per frame per line: frame, tracepoint, offset, pc,\n"
               "registers, memory [{address, length, hex}], variables"},
    FormatFlag{"--perfetto", OutputFormat::Perfetto,
               "Chrome trace-event JSON for ui.perfetto.dev or chrome://tracing:\n"
               "one track per tracepoint and one per thread, one instant event per\n"
               "frame, timed by $trace_timestamp_ns or $trace_timestamp when the\n"
               "frames collected them, else by frame order"},
    FormatFlag{"--html", OutputFormat::Html,
               "one self-contained HTML page: the tracepoints, a timeline of hits per\n"
               "tracepoint and per thread, a plot of each collected value over time;\n"
               "click a hit to see its frame"},
};

constexpr const char* kDescription =
    "Prints a trace file written by gdb's `tsave` or tpagent's `tsave -r`: status, trace\n"
    "state variables, tracepoints with their actions and source, and every frame with its\n"
    "registers (named from the file's target description), memory blocks and variable\n"
    "values. FILE may be the folder of a recording (tpagent --record DIR): the files of\n"
    "its newest run are read as one trace, each file's start marked with what the\n"
    "recording had not recorded by then.";

// Two columns, so that help2man keeps one example per paragraph.
constexpr const char* kFooter = R"(Exit status:
  0  ok
  1  unreadable or malformed file: the message names the byte offset; the frames
     before the damage are printed first
  2  bad usage

Examples:
  tpdump trace.tf                              everything in the file
  tpdump --tracepoint 2 --frames 0-9 trace.tf  tracepoint 2, frames 0 to 9
  tpdump --json --registers rip,rsp trace.tf   JSON lines with two registers
  tpdump --perfetto trace.tf > trace.json      then open it in ui.perfetto.dev
  tpdump --html trace.tf > trace.html          then open it in a browser
  tpdump --seal rec/trace-000007.tf            a recorded file cut short, sealed
  tpdump rec                                   a recording's folder, as one trace
  tpdump --follow --json rec                   its frames as they are recorded
  tpdump record board:7000 rec                 a recording streamed from a board
                                               (tpagent --record-host 7000) into rec)";

// GNU layout, as help2man reads it: the usage line first, "-h, --help", option values by
// name only.
class GnuFormatter : public CLI::Formatter {
  public:
    std::string make_help(const CLI::App* app, std::string name,
                          CLI::AppFormatMode) const override {
        std::string options = make_groups(app, CLI::AppFormatMode::Normal);
        while (options.ends_with("\n\n"))
            options.pop_back();
        return fmt::format("Usage: {} [OPTIONS] FILE\n{}\n{}\n{}\n", name, app->get_description(),
                           options, app->get_footer());
    }
    std::string make_option_name(const CLI::Option* opt, bool positional) const override {
        return CLI::detail::find_and_replace(opt->get_name(positional, true), ",", ", ");
    }
    std::string make_option_opts(const CLI::Option* opt) const override {
        return opt->get_type_size() != 0 ? " " + opt->get_type_name() : std::string();
    }
};

// Option values as typed; checked after parsing so that errors name them.
struct Given {
    std::vector<std::string> tracepoints;
    std::string frames;
    std::string registers;
    const CLI::Option* frames_option = nullptr; // given at all, even as ""
    const CLI::Option* registers_option = nullptr;
    std::vector<std::string> files;
    std::array<bool, kFormatFlags.size()> formats{};
};

void define_options(CLI::App& app, Options& options, Given& given) {
    app.description(kDescription);
    app.footer(kFooter);
    app.formatter(std::make_shared<GnuFormatter>());
    app.get_formatter()->column_width(21);
    app.set_help_flag();
    app.add_flag("-h,--help", options.help, "print this help and exit");
    app.add_flag("--version", options.version, "print the version and exit");
    app.add_option("--tracepoint", given.tracepoints,
                   "only tracepoint N and its frames (repeatable)")
        ->type_name("N")
        ->expected(1) // one number each time, not the file name after it too
        ->allow_extra_args(false)
        ->multi_option_policy(CLI::MultiOptionPolicy::TakeAll);
    given.frames_option =
        app.add_option("--frames", given.frames,
                       "only frames A to B (frame numbers as gdb's tfind counts them;\n"
                       "also A, A- and -B)")
            ->type_name("A-B")
            ->multi_option_policy(CLI::MultiOptionPolicy::TakeLast);
    given.registers_option =
        app.add_option("--registers", given.registers,
                       "comma-separated register names to show, or `none` (default: text\n"
                       "shows every register of at most 8 bytes and the wider ones that are\n"
                       "not all zero; JSON shows all)")
            ->type_name("LIST")
            ->multi_option_policy(CLI::MultiOptionPolicy::TakeLast);
    app.add_flag("--all-registers", options.all_registers,
                 "text: also show wide registers that are all zero");
    app.add_flag("--disassemble", options.disassemble,
                 "text: show agent expressions instruction by instruction");
    app.add_flag("--seal", options.seal,
                 "a file cut short (tpagent --record killed, the power lost): cut it\n"
                 "after its last whole frame and end its frames, so that gdb's\n"
                 "`target tfile` opens it; says what it did and prints nothing else");
    app.add_flag("--follow", options.follow,
                 "FILE is the folder of a recording going on (tpagent --record DIR):\n"
                 "print its frames as they reach its files, text or JSON lines, from\n"
                 "the newest file on, until interrupted; or [HOST:]PORT of a board\n"
                 "streaming one (tpagent --record-host): its frames as they come");
    for (std::size_t i = 0; i < kFormatFlags.size(); ++i)
        app.add_flag(kFormatFlags[i].name, given.formats[i], kFormatFlags[i].help);
    app.add_option("FILE", given.files)->group("");
}

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

// Turns the typed values into `options`.
Status apply(const Given& given, Options& options) {
    for (const std::string& text : given.tracepoints) {
        auto n = parse_count(text);
        if (!n || *n == 0 || *n > 0xffff)
            return usage(fmt::format("--tracepoint: expected a number 1..65535, not '{}'", text));
        options.tracepoints.insert(static_cast<std::uint32_t>(*n));
    }
    if (given.frames_option->count())
        if (auto s = parse_frames(given.frames, options); !s) return s;
    if (given.registers_option->count()) {
        for (std::string_view name : protocol::split(given.registers, ','))
            if (!name.empty()) options.registers.emplace_back(name);
        if (options.registers.empty()) return usage("--registers: no names given");
    }
    const char* format_flag = nullptr;
    for (std::size_t i = 0; i < kFormatFlags.size(); ++i) {
        if (!given.formats[i]) continue;
        if (format_flag)
            return usage(
                fmt::format("{} and {} exclude each other", format_flag, kFormatFlags[i].name));
        format_flag = kFormatFlags[i].name;
        options.format = kFormatFlags[i].format;
    }
    if (options.seal && format_flag)
        return usage(fmt::format("--seal and {} exclude each other", format_flag));
    if (options.follow && options.seal) return usage("--follow and --seal exclude each other");
    if (options.follow &&
        (options.format == OutputFormat::Perfetto || options.format == OutputFormat::Html))
        return usage(fmt::format("--follow prints text or JSON lines, not {}", format_flag));
    if (given.files.size() > 1)
        return usage(
            fmt::format("more than one file given ('{}', '{}')", given.files[0], given.files[1]));
    if (!given.files.empty()) options.path = given.files[0];
    return ok_status();
}

} // namespace

Result<Options> parse_options(std::span<char* const> args) {
    Options options;
    Given given;
    CLI::App app("", "tpdump");
    define_options(app, options, given);
    try {
        // This form of parse takes the arguments last first.
        app.parse(std::vector<std::string>(args.rbegin(), args.rend()));
    } catch (const CLI::ParseError& e) {
        return usage(e.what());
    }
    if (options.help || options.version) return options;
    if (auto s = apply(given, options); !s) return s.error();
    if (options.path.empty()) return usage("no trace file given");
    return options;
}

std::string help_text() {
    Options options;
    Given given;
    CLI::App app("", "tpdump");
    define_options(app, options, given);
    return app.help();
}

std::string version_text() {
    return fmt::format("tpdump {}\n", TPAGENT_VERSION);
}

} // namespace tpagent::tpdump
