#include "tools/tracefile/register_layout.hpp"

#include <algorithm>
#include <charconv>
#include <fmt/format.h>
#include <set>

namespace tpagent::tracefile {

namespace {

// Bounds that no real description reaches (AArch64 SVE tops out at 2048-bit registers), so
// a corrupt description cannot make the reader plan absurd blocks.
constexpr unsigned kMaxBitsize = 65536;
constexpr unsigned kMaxRegnum = 0xffff;

Error bad(std::size_t offset, std::string what) {
    return make_error(ErrorCode::BadInput,
                      fmt::format("target description offset {}: {}", offset, what));
}

bool is_space(char c) {
    return c == ' ' || c == '\t' || c == '\n' || c == '\r';
}

std::optional<unsigned> parse_decimal(std::string_view text, unsigned max) {
    unsigned value = 0;
    auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), value);
    if (ec != std::errc() || end != text.data() + text.size() || value > max) return std::nullopt;
    return value;
}

struct Attribute {
    std::string_view name;
    std::string_view value;
};

// Attributes of the tag starting at `pos` (just after the element name) up to its '>';
// `pos` ends past the '>'.
Result<std::vector<Attribute>> scan_attributes(std::string_view xml, std::size_t& pos) {
    std::vector<Attribute> out;
    for (;;) {
        while (pos < xml.size() && is_space(xml[pos]))
            ++pos;
        if (pos >= xml.size()) return bad(pos, "unterminated tag");
        if (xml[pos] == '>') {
            ++pos;
            return out;
        }
        if (xml.substr(pos, 2) == "/>") {
            pos += 2;
            return out;
        }
        std::size_t name_start = pos;
        while (pos < xml.size() && !is_space(xml[pos]) && xml[pos] != '=' && xml[pos] != '>' &&
               xml[pos] != '/')
            ++pos;
        std::string_view name = xml.substr(name_start, pos - name_start);
        while (pos < xml.size() && is_space(xml[pos]))
            ++pos;
        if (name.empty() || pos >= xml.size() || xml[pos] != '=')
            return bad(pos, "expected attribute=\"value\"");
        ++pos;
        while (pos < xml.size() && is_space(xml[pos]))
            ++pos;
        if (pos >= xml.size() || (xml[pos] != '"' && xml[pos] != '\''))
            return bad(pos, "expected a quoted attribute value");
        char quote = xml[pos++];
        std::size_t end = xml.find(quote, pos);
        if (end == std::string_view::npos) return bad(pos, "unterminated attribute value");
        out.push_back({name, xml.substr(pos, end - pos)});
        pos = end + 1;
    }
}

std::optional<std::string_view> find_attribute(const std::vector<Attribute>& attributes,
                                               std::string_view name) {
    for (const Attribute& a : attributes)
        if (a.name == name) return a.value;
    return std::nullopt;
}

bool starts_element(std::string_view xml, std::size_t pos, std::string_view name) {
    if (xml.substr(pos, name.size()) != name) return false;
    std::size_t after = pos + name.size();
    return after < xml.size() && (is_space(xml[after]) || xml[after] == '/' || xml[after] == '>');
}

} // namespace

std::size_t RegisterLayout::block_size() const {
    return registers.empty() ? 0 : registers.back().offset + registers.back().size;
}

unsigned RegisterLayout::register_count() const {
    return registers.empty() ? 0 : registers.back().regnum + 1;
}

const RegisterInfo* RegisterLayout::find(std::string_view name) const {
    for (const RegisterInfo& r : registers)
        if (r.name == name) return &r;
    return nullptr;
}

const RegisterInfo* RegisterLayout::pc() const {
    for (std::string_view name : {"rip", "pc", "eip"})
        if (const RegisterInfo* r = find(name)) return r;
    return nullptr;
}

Result<RegisterLayout> parse_register_layout(std::string_view xml) {
    RegisterLayout layout;
    std::set<unsigned> seen;
    unsigned next_regnum = 0;
    std::size_t pos = 0;
    while ((pos = xml.find('<', pos)) != std::string_view::npos) {
        std::size_t tag = pos;
        ++pos;
        if (xml.substr(pos, 3) == "!--") {
            std::size_t end = xml.find("-->", pos + 3);
            if (end == std::string_view::npos) return bad(tag, "unterminated comment");
            pos = end + 3;
        } else if (starts_element(xml, pos, "architecture")) {
            std::size_t text = xml.find('>', pos);
            std::size_t end = text == std::string_view::npos ? text : xml.find('<', text);
            if (end == std::string_view::npos) return bad(tag, "unterminated <architecture>");
            layout.architecture = std::string(xml.substr(text + 1, end - text - 1));
            pos = end;
        } else if (starts_element(xml, pos, "reg")) {
            pos += 3;
            auto attributes = scan_attributes(xml, pos);
            if (!attributes) return attributes.error();
            auto name = find_attribute(*attributes, "name");
            auto bitsize_text = find_attribute(*attributes, "bitsize");
            if (!name || name->empty()) return bad(tag, "<reg> without a name");
            if (!bitsize_text)
                return bad(tag, fmt::format("<reg name=\"{}\"> without bitsize", *name));
            auto bitsize = parse_decimal(*bitsize_text, kMaxBitsize);
            if (!bitsize || *bitsize == 0 || *bitsize % 8 != 0)
                return bad(tag,
                           fmt::format("register {}: bad bitsize \"{}\"", *name, *bitsize_text));
            unsigned regnum = next_regnum;
            if (auto text = find_attribute(*attributes, "regnum")) {
                auto n = parse_decimal(*text, kMaxRegnum);
                if (!n)
                    return bad(tag, fmt::format("register {}: bad regnum \"{}\"", *name, *text));
                regnum = *n;
            }
            if (regnum > kMaxRegnum)
                return bad(tag, fmt::format("register {}: regnum too large", *name));
            if (!seen.insert(regnum).second)
                return bad(tag, fmt::format("register {}: regnum {} used twice", *name, regnum));
            std::string type(find_attribute(*attributes, "type").value_or(""));
            layout.registers.push_back(
                {std::string(*name), std::move(type), regnum, 0, *bitsize / 8});
            next_regnum = regnum + 1;
        }
    }
    std::sort(layout.registers.begin(), layout.registers.end(),
              [](const RegisterInfo& a, const RegisterInfo& b) { return a.regnum < b.regnum; });
    std::size_t offset = 0;
    for (RegisterInfo& r : layout.registers) {
        r.offset = offset;
        offset += r.size;
    }
    return layout;
}

std::optional<std::span<const std::uint8_t>> register_bytes(const RegisterInfo& reg,
                                                            std::span<const std::uint8_t> block) {
    if (reg.offset > block.size() || block.size() - reg.offset < reg.size) return std::nullopt;
    return block.subspan(reg.offset, reg.size);
}

std::optional<std::uint64_t> register_value(const RegisterInfo& reg,
                                            std::span<const std::uint8_t> block) {
    auto bytes = register_bytes(reg, block);
    if (!bytes || bytes->size() > 8) return std::nullopt;
    std::uint64_t value = 0;
    for (std::size_t i = 0; i < bytes->size(); ++i)
        value |= static_cast<std::uint64_t>((*bytes)[i]) << (8 * i);
    return value;
}

} // namespace tpagent::tracefile
