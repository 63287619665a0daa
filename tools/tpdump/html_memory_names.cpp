#include "tools/tpdump/html_memory_names.hpp"

#include "trace/frame_format.hpp"
#include "tools/tpdump/html_item_alignment.hpp"
#include <algorithm>
#include <variant>

namespace tpagent::tpdump {

namespace {

// Names for the M actions `ranges` from the items no expression took. Only when there are as many
// such items as ranges: then none of them compiled to nothing or merged with a neighbour, so each
// made one range. A literal `{type} address` then finds its range by address, and a single item
// left over owns the single range left.
void name_ranges(const std::vector<SourceItem>& items, const std::vector<bool>& took_expression,
                 const std::vector<const trace::MemoryRange*>& ranges,
                 std::vector<std::string>& names) {
    std::vector<const SourceItem*> candidates;
    for (std::size_t i = 0; i < items.size(); ++i)
        if ((items[i].kind == SourceItemKind::Symbol ||
             items[i].kind == SourceItemKind::MemoryAt) &&
            !took_expression[i])
            candidates.push_back(&items[i]);
    if (candidates.size() != ranges.size()) return;
    std::vector<const SourceItem*> left;
    for (const SourceItem* item : candidates) {
        if (!item->address) {
            left.push_back(item);
            continue;
        }
        auto at_address = [&](const trace::MemoryRange* r) {
            return r->absolute() && r->offset == *item->address;
        };
        auto it = std::find_if(ranges.begin(), ranges.end(), at_address);
        if (it == ranges.end()) return;
        names[static_cast<std::size_t>(it - ranges.begin())] = item->text;
    }
    if (left.size() != 1) return;
    for (std::size_t r = 0; r < ranges.size(); ++r)
        if (names[r].empty()) {
            names[r] = left[0]->text;
            return;
        }
}

ActionPlan plan_list(const SourceItems& source, const std::vector<trace::ActionString>& strings) {
    std::vector<const trace::Action*> actions;
    for (const trace::ActionString& s : strings)
        for (const trace::Action& a : s.actions)
            actions.push_back(&a);
    std::vector<ExpressionShape> shapes;
    std::vector<const trace::MemoryRange*> ranges;
    for (const trace::Action* a : actions) {
        if (const auto* x = std::get_if<trace::Expression>(a))
            shapes.push_back(shape_of(x->program));
        if (const auto* r = std::get_if<trace::MemoryRange>(a)) ranges.push_back(r);
    }

    std::vector<std::string> expression_names(shapes.size()), range_names(ranges.size());
    if (source.known) {
        Alignment alignment = align(source.items, shapes, ranges);
        for (std::size_t j = 0; j < shapes.size(); ++j) {
            if (!alignment.owner[j] || !shapes[j].value_traced) continue;
            const SourceItem& item = source.items[*alignment.owner[j]];
            if (item.kind == SourceItemKind::Symbol || item.kind == SourceItemKind::MemoryAt ||
                item.kind == SourceItemKind::Expression)
                expression_names[j] = item.text;
        }
        if (alignment.unique) name_ranges(source.items, alignment.took, ranges, range_names);
    }

    ActionPlan plan;
    std::size_t x = 0, r = 0;
    for (const trace::Action* a : actions) {
        PlannedAction p;
        if (std::holds_alternative<trace::Expression>(*a)) {
            p.traces = shapes[x].traces;
            p.fixed = shapes[x].fixed;
            p.name = std::move(expression_names[x++]);
        } else if (const auto* range = std::get_if<trace::MemoryRange>(a)) {
            p.is_range = true;
            p.range = *range;
            p.name = std::move(range_names[r++]);
        } else {
            continue; // R and L actions record no M block
        }
        plan.actions.push_back(std::move(p));
    }
    return plan;
}

// Walks the M blocks of a frame along a plan: the names, or nothing if the blocks are not
// the ones the plan records.
class BlockWalk {
  public:
    BlockWalk(const tracefile::TraceFile& file, const tracefile::Frame& frame,
              const std::vector<const trace::FrameBlock*>& blocks)
        : file_(file), frame_(frame), blocks_(blocks), names_(blocks.size()) {}

    std::optional<std::vector<std::string>> run(const ActionPlan& plan) {
        for (const PlannedAction& a : plan.actions) {
            if (a.is_range) {
                if (!take(range_address(a.range), a.range.length, a.name)) return std::nullopt;
                continue;
            }
            if (!a.fixed) return std::nullopt;
            for (std::size_t k = 0; k < a.traces.size(); ++k)
                if (!take(std::nullopt, a.traces[k], k + 1 == a.traces.size() ? a.name : ""))
                    return std::nullopt;
        }
        if (next_ != blocks_.size()) return std::nullopt;
        return std::move(names_);
    }

  private:
    // Where an M action reads: its offset, plus its base register when it has one.
    std::optional<std::uint64_t> range_address(const trace::MemoryRange& range) const {
        if (range.absolute()) return range.offset;
        auto block = frame_.registers();
        if (!block || !file_.register_layout()) return std::nullopt;
        for (const tracefile::RegisterInfo& reg : file_.register_layout()->registers)
            if (reg.regnum == static_cast<unsigned>(range.base_register))
                if (auto base = tracefile::register_value(reg, *block)) return *base + range.offset;
        return std::nullopt;
    }

    // The blocks of one recorded range: `size` bytes (split into blocks of kMaxMemoryBlock),
    // or one whole block when the size is only known at run time.
    bool take(std::optional<std::uint64_t> address, std::optional<std::uint64_t> size,
              const std::string& name) {
        if (next_ >= blocks_.size()) return false;
        const std::uint64_t start = blocks_[next_]->address;
        if (address && start != *address) return false;
        // A full block of unknown size might go on in the next one, or not.
        if (!size && blocks_[next_]->data.size() == trace::kMaxMemoryBlock) return false;
        std::uint64_t got = 0;
        for (;;) {
            if (next_ >= blocks_.size()) return false;
            const trace::FrameBlock& b = *blocks_[next_];
            if (b.address != start + got) return false;
            names_[next_++] = name;
            got += b.data.size();
            if (b.data.size() != trace::kMaxMemoryBlock || (size && got >= *size)) break;
        }
        return !size || got == *size;
    }

    const tracefile::TraceFile& file_;
    const tracefile::Frame& frame_;
    const std::vector<const trace::FrameBlock*>& blocks_;
    std::vector<std::string> names_;
    std::size_t next_ = 0;
};

} // namespace

MemoryNames::MemoryNames(const tracefile::TraceFile& file) : file_(file) {
    for (const trace::Tracepoint& tp : file.tracepoints()) {
        TracepointSourceItems items = source_items(tp, file);
        auto& plans = plans_[tp.definition.key.number];
        plans.push_back(plan_list(items.hit, tp.definition.actions));
        if (!tp.definition.stepping_actions.empty())
            plans.push_back(plan_list(items.stepping, tp.definition.stepping_actions));
    }
}

std::vector<std::string> MemoryNames::names(const tracefile::Frame& frame) const {
    std::vector<const trace::FrameBlock*> blocks;
    for (const trace::FrameBlock& b : frame.blocks)
        if (b.type == 'M') blocks.push_back(&b);
    std::vector<std::string> unnamed(blocks.size());
    auto it = plans_.find(frame.tracepoint);
    if (it == plans_.end()) return unnamed;
    std::optional<std::vector<std::string>> found;
    for (const ActionPlan& plan : it->second) {
        auto names = BlockWalk(file_, frame, blocks).run(plan);
        if (!names) continue;
        if (found && *found != *names) return unnamed; // two lists fit and disagree
        found = std::move(names);
    }
    return found ? *found : unnamed;
}

} // namespace tpagent::tpdump
