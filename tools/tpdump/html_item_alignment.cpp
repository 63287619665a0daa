#include "tools/tpdump/html_item_alignment.hpp"

#include <algorithm>

namespace tpagent::tpdump {

namespace {

// Larger lists are not aligned (the count tables are items x expressions).
constexpr std::size_t kMaxAlignedItems = 256;

// Alignments are counted up to kMany; a count that reaches it proves nothing.
using Count = std::uint64_t;
constexpr Count kMany = Count{1} << 62;
Count add(Count a, Count b) {
    return std::min(a + b, kMany);
}
Count mul(Count a, Count b) {
    if (a == 0 || b == 0) return 0;
    return a >= kMany / b ? kMany : std::min(a * b, kMany);
}

// `=` as an assignment (also `+=` and the like, not ==, <=, >= or !=), or ++ or --.
bool has_assignment(std::string_view text) {
    if (text.find("++") != std::string_view::npos || text.find("--") != std::string_view::npos)
        return true;
    for (std::size_t i = 0; i < text.size(); ++i)
        if (text[i] == '=' && (i + 1 == text.size() || text[i + 1] != '=') &&
            (i == 0 || std::string_view("=<>!").find(text[i - 1]) == std::string_view::npos))
            return true;
    return false;
}

// Whether gdb can have compiled `item` into an expression of this shape. Each rule is what
// gdb's compiler always does, so a rule never rejects the true alignment.
bool fits(const SourceItem& item, const ExpressionShape& x) {
    auto traces_variable = [&](std::uint32_t n) {
        return std::find(x.traced_variables.begin(), x.traced_variables.end(), n) !=
               x.traced_variables.end();
    };
    // A variable whose location needs no memory read records at most its own bytes.
    const bool plain_variable = x.fixed && !x.sets_variable && x.traced_variables.empty() &&
                                (x.traces.empty() || (x.traces.size() == 1 && x.value_traced));
    switch (item.kind) {
    case SourceItemKind::Variable: // getv, tracev
        return x.traces.empty() && traces_variable(item.variable);
    case SourceItemKind::Evaluation: // teval does not trace
        return x.traces.empty() && x.traced_variables.empty();
    case SourceItemKind::Symbol:
        return plain_variable;
    case SourceItemKind::MemoryAt: // a literal address is read as a constant
        return plain_variable && (!item.address || x.constant_address == item.address);
    case SourceItemKind::Expression: // setv needs an assignment, tracev a `$variable`
        return (!x.sets_variable || has_assignment(item.text)) &&
               (x.traced_variables.empty() || item.text.find('$') != std::string::npos);
    case SourceItemKind::NoMemory:
        return false;
    }
    return false;
}

} // namespace

Alignment align(const std::vector<SourceItem>& items, const std::vector<ExpressionShape>& shapes,
                const std::vector<const trace::MemoryRange*>& ranges) {
    const std::size_t n = items.size(), m = shapes.size();
    Alignment out;
    out.owner.resize(m);
    if (n > kMaxAlignedItems || m > kMaxAlignedItems) return out;

    auto can_skip = [&](std::size_t i) {
        const SourceItem& item = items[i];
        switch (item.kind) {
        case SourceItemKind::NoMemory:
        case SourceItemKind::Symbol:
            return true;
        case SourceItemKind::MemoryAt: // then an M range reads the literal address
            return !item.address ||
                   std::any_of(ranges.begin(), ranges.end(), [&](const trace::MemoryRange* r) {
                       return r->absolute() && r->offset == *item.address;
                   });
        default:
            return false;
        }
    };
    auto can_take = [&](std::size_t i, std::size_t j) {
        return j < m && fits(items[i], shapes[j]);
    };
    // before[i][j]: alignments of items[..i) with shapes[..j); after[i][j]: of the rests.
    std::vector<Count> before((n + 1) * (m + 1), 0), after((n + 1) * (m + 1), 0);
    auto at = [&](std::vector<Count>& t, std::size_t i, std::size_t j) -> Count& {
        return t[i * (m + 1) + j];
    };
    at(before, 0, 0) = 1;
    for (std::size_t i = 0; i < n; ++i)
        for (std::size_t j = 0; j <= m; ++j) {
            Count c = at(before, i, j);
            if (can_skip(i)) at(before, i + 1, j) = add(at(before, i + 1, j), c);
            if (can_take(i, j)) at(before, i + 1, j + 1) = add(at(before, i + 1, j + 1), c);
        }
    at(after, n, m) = 1;
    for (std::size_t i = n; i-- > 0;)
        for (std::size_t j = m + 1; j-- > 0;)
            at(after, i, j) = add(can_skip(i) ? at(after, i + 1, j) : 0,
                                  can_take(i, j) ? at(after, i + 1, j + 1) : 0);

    const Count total = at(after, 0, 0);
    if (total == 0 || total >= kMany) return out;
    // Item i takes expression j in every alignment when all of them go through that pair.
    for (std::size_t i = 0; i < n; ++i)
        for (std::size_t j = 0; j < m; ++j)
            if (can_take(i, j) && mul(at(before, i, j), at(after, i + 1, j + 1)) == total)
                out.owner[j] = i;
    out.unique = total == 1;
    if (out.unique) {
        out.took.assign(n, false);
        for (const auto& i : out.owner)
            out.took[*i] = true;
    }
    return out;
}

} // namespace tpagent::tpdump
