#include "tools/tpdump/html_source_items.hpp"
#include "protocol/hex.hpp"

#include <algorithm>
#include <cctype>
#include <charconv>

namespace tpagent::tpdump {

using protocol::trim;

namespace {

bool starts_with_nocase(std::string_view text, std::string_view prefix) {
    return text.size() >= prefix.size() &&
           std::equal(prefix.begin(), prefix.end(), text.begin(), [](char a, char b) {
               return std::tolower(static_cast<unsigned char>(a)) ==
                      std::tolower(static_cast<unsigned char>(b));
           });
}

bool is_identifier(std::string_view text) {
    auto word_char = [](char c) { return std::isalnum(static_cast<unsigned char>(c)) || c == '_'; };
    if (text.empty() || std::isdigit(static_cast<unsigned char>(text[0]))) return false;
    // C++ qualified names (ns::name) are plain symbols too.
    for (std::size_t i = 0; i < text.size(); ++i) {
        if (word_char(text[i])) continue;
        if (text.substr(i, 2) != "::" || i + 2 >= text.size() ||
            std::isdigit(static_cast<unsigned char>(text[i + 2])))
            return false;
        ++i;
    }
    return true;
}

// Calls visit(index, depth) for each character outside quotes, until it returns true;
// depth counts the brackets open around the character (a bracket itself is outside).
template <class Visit> std::size_t scan(std::string_view text, Visit visit) {
    int depth = 0;
    char quote = 0;
    for (std::size_t i = 0; i < text.size(); ++i) {
        char c = text[i];
        if (quote) {
            if (c == '\\')
                ++i;
            else if (c == quote)
                quote = 0;
            continue;
        }
        if (c == '"' || c == '\'') quote = c;
        if (c == ')' || c == ']' || c == '}') --depth;
        if (visit(i, depth)) return i;
        if (c == '(' || c == '[' || c == '{') ++depth;
    }
    return std::string_view::npos;
}

// The index of the bracket closing the one at text[0], or npos.
std::size_t matching_close(std::string_view text) {
    return scan(text, [&](std::size_t i, int depth) {
        return i > 0 && depth == 0 && (text[i] == ')' || text[i] == ']' || text[i] == '}');
    });
}

// `(x)` parses to the same expression as `x` (so `(glob)` is still a plain symbol).
std::string_view strip_parentheses(std::string_view text) {
    while (text.size() >= 2 && text.front() == '(' && matching_close(text) == text.size() - 1)
        text = trim(text.substr(1, text.size() - 2));
    return text;
}

class ItemReader {
  public:
    explicit ItemReader(const tracefile::TraceFile& file) : file_(file) {}

    // One item of a `collect` line, as gdb's encode_actions_1 tells them apart.
    std::optional<SourceItem> collected(std::string_view raw) const {
        std::string_view text = strip_parentheses(trim(raw));
        if (text.empty()) return std::nullopt;
        // gdb checks these prefixes before parsing the expression.
        if (starts_with_nocase(text, "$reg") || starts_with_nocase(text, "$_sdata"))
            return item(SourceItemKind::NoMemory, text);
        if (starts_with_nocase(text, "$arg") || starts_with_nocase(text, "$loc") ||
            starts_with_nocase(text, "$_ret"))
            return std::nullopt; // as many ranges and expressions as the scope has
        if (text[0] == '$' && is_identifier(text.substr(1))) {
            for (const tracefile::TraceVariable& v : file_.variables())
                if (v.name == text.substr(1)) {
                    SourceItem out = item(SourceItemKind::Variable, text);
                    out.variable = v.number;
                    return out;
                }
            // gdb refuses convenience variables in actions, so this names a register.
            return item(SourceItemKind::NoMemory, text);
        }
        if (text[0] == '{') {
            std::size_t close = matching_close(text);
            if (close == std::string_view::npos) return std::nullopt;
            SourceItem out = item(SourceItemKind::MemoryAt, text);
            out.address = parse_integer_literal(trim(text.substr(close + 1)));
            return out;
        }
        if (is_identifier(text)) return item(SourceItemKind::Symbol, text);
        return item(SourceItemKind::Expression, text);
    }

    static SourceItem item(SourceItemKind kind, std::string_view text) {
        SourceItem out;
        out.kind = kind;
        out.text = std::string(text);
        return out;
    }

  private:
    const tracefile::TraceFile& file_;
};

} // namespace

std::optional<std::uint64_t> parse_integer_literal(std::string_view text) {
    int base = 10;
    if (starts_with_nocase(text, "0x")) {
        text.remove_prefix(2);
        base = 16;
    }
    std::uint64_t value = 0;
    auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), value, base);
    if (text.empty() || ec != std::errc() || end != text.data() + text.size()) return std::nullopt;
    return value;
}

std::vector<std::string_view> split_top_level(std::string_view text, char separator) {
    std::vector<std::string_view> out;
    std::size_t start = 0;
    scan(text, [&](std::size_t i, int depth) {
        if (depth == 0 && text[i] == separator) {
            out.push_back(trim(text.substr(start, i - start)));
            start = i + 1;
        }
        return false;
    });
    out.push_back(trim(text.substr(start)));
    return out;
}

TracepointSourceItems source_items(const trace::Tracepoint& tp, const tracefile::TraceFile& file) {
    TracepointSourceItems out;
    ItemReader reader(file);
    SourceItems* list = &out.hit;
    for (const trace::SourceString& source : tp.sources) {
        if (source.type != "cmd") continue;
        std::string_view line = trim(source.text);
        if (line.empty() || line[0] == '#') continue;
        std::size_t word_end = std::min(line.find_first_of(" \t/"), line.size());
        std::string_view command = line.substr(0, word_end);
        std::string_view rest = line.substr(word_end);
        if (!rest.empty() && rest[0] == '/') // collect/s: the flags do not change the actions
            rest = rest.substr(std::min(rest.find_first_of(" \t"), rest.size()));
        if (command == "while-stepping" || command == "stepping" || command == "ws") {
            if (list == &out.stepping) list->known = false;
            list = &out.stepping;
        } else if (command == "end") {
            list = &out.hit;
        } else if (command == "collect" || command == "teval") {
            for (std::string_view part : split_top_level(rest, ',')) {
                std::optional<SourceItem> item =
                    command == "teval"
                        ? ItemReader::item(SourceItemKind::Evaluation, strip_parentheses(part))
                        : reader.collected(part);
                if (!item || item->text.empty())
                    list->known = false;
                else
                    list->items.push_back(std::move(*item));
            }
        } else {
            list->known = false;
        }
    }
    return out;
}

} // namespace tpagent::tpdump
