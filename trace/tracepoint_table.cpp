#include "trace/tracepoint_table.hpp"

#include <fmt/format.h>

namespace tpagent::trace {

Result<TracepointTable::DefineOutcome> TracepointTable::define(TracepointPacket packet) {
    if (auto* actions = std::get_if<Result<ActionPacket>>(&packet))
        return add_actions(std::move(*actions));
    pending_.reset();
    if (const auto* refused = std::get_if<Error>(&packet)) return *refused;
    auto& header = std::get<Result<TracepointHeader>>(packet);
    if (!header) return header.error();
    if (header->more) {
        DefineOutcome out{Defined::Pending, header->definition.key};
        pending_ = Pending{std::move(header->definition)};
        return out;
    }
    return finish(std::move(header->definition));
}

Result<TracepointTable::DefineOutcome> TracepointTable::add_actions(Result<ActionPacket> packet) {
    // Whatever happens, this packet ends the pending definition unless it is valid.
    std::optional<Pending> pending = std::move(pending_);
    pending_.reset();
    if (!pending) return make_error(ErrorCode::BadTracepoint, "QTDP actions without a definition");
    if (!packet) return packet.error();
    if (packet->key != pending->definition.key)
        return make_error(ErrorCode::BadTracepoint,
                          fmt::format("QTDP actions for {} while defining {}",
                                      format_key(packet->key),
                                      format_key(pending->definition.key)));
    if (packet->starts_stepping) {
        if (pending->stepping)
            return make_error(ErrorCode::BadTracepoint, "QTDP: second while-stepping marker");
        pending->stepping = true;
    }
    auto& list =
        pending->stepping ? pending->definition.stepping_actions : pending->definition.actions;
    list.push_back(std::move(packet->actions));
    if (packet->more) {
        DefineOutcome out{Defined::Pending, pending->definition.key};
        pending_ = std::move(pending);
        return out;
    }
    return finish(std::move(pending->definition));
}

Result<std::optional<TracepointTable::DefineOutcome>> TracepointTable::complete_pending() {
    if (!pending_) return std::optional<DefineOutcome>();
    TracepointDefinition definition = std::move(pending_->definition);
    pending_.reset();
    auto done = finish(std::move(definition));
    if (!done) return done.error();
    return std::optional<DefineOutcome>(*done);
}

Result<TracepointTable::DefineOutcome> TracepointTable::finish(TracepointDefinition definition) {
    const TracepointKey key = definition.key;
    auto it = tracepoints_.find(key);
    if (it == tracepoints_.end()) {
        tracepoints_.emplace(key, Tracepoint{std::move(definition), {}, {}});
        sources_restart_.insert(key);
        return DefineOutcome{Defined::Added, key};
    }
    TracepointDefinition& old = it->second.definition;
    // The enabled flag may change during a run (QTEnable/QTDisable), so it does not make a
    // definition different; gdb's re-sent flag is its current view and wins.
    TracepointDefinition compared = definition;
    compared.enabled = old.enabled;
    if (compared == old) {
        old.enabled = definition.enabled;
        sources_restart_.insert(key);
        return DefineOutcome{Defined::Identical, key};
    }
    // gdb re-sends a tracepoint whose actions or locations changed (a shared library came or
    // went) during a run: it takes the new definition at its next hit, unless its compiled
    // record lives in the program (a fast tracepoint's jump): that waits for the next tstart.
    if (running_ && in_program_.count(key))
        return make_error(ErrorCode::BadTracepoint,
                          fmt::format("fast tracepoint {} is defined differently and a trace is "
                                      "running: tstop, then tstart",
                                      format_key(key)));
    it->second = Tracepoint{std::move(definition), {}, {}};
    sources_restart_.insert(key);
    return DefineOutcome{Defined::Replaced, key};
}

void TracepointTable::add_source(SourcePacket packet) {
    Tracepoint* tp = find(packet.key);
    // gdb sends the source of a tracepoint it could not define (an action it failed to
    // compile): kept nowhere, and no error, as gdbserver.
    if (!tp) return;
    if (sources_restart_.erase(packet.key) != 0) tp->sources.clear();
    tp->sources.push_back(std::move(packet.source));
}

Status TracepointTable::set_enabled(const TracepointKey& key, bool enabled) {
    Tracepoint* tp = find(key);
    if (!tp)
        return make_error(ErrorCode::NotFound, fmt::format("no tracepoint {}", format_key(key)));
    tp->definition.enabled = enabled;
    return ok_status();
}

void TracepointTable::clear() {
    tracepoints_.clear();
    sources_restart_.clear();
    pending_.reset();
}

Tracepoint* TracepointTable::find(const TracepointKey& key) {
    auto it = tracepoints_.find(key);
    return it == tracepoints_.end() ? nullptr : &it->second;
}

const Tracepoint* TracepointTable::find(const TracepointKey& key) const {
    auto it = tracepoints_.find(key);
    return it == tracepoints_.end() ? nullptr : &it->second;
}

void TracepointTable::reset_counters() {
    for (auto& [key, tp] : tracepoints_)
        tp.counters = {};
}

void TracepointTable::record_hit(const TracepointKey& key, std::uint64_t frame_bytes) {
    if (Tracepoint* tp = find(key)) {
        ++tp->counters.hits;
        tp->counters.bytes_used += frame_bytes;
    }
}

void TracepointTable::record_step(const TracepointKey& key, std::uint64_t frame_bytes) {
    if (Tracepoint* tp = find(key)) tp->counters.bytes_used += frame_bytes;
}

UploadCursor TracepointTable::upload() const {
    std::vector<std::string> pieces;
    // Newest first: gdb prepends each tracepoint it reads (qTfP or a trace file) to its list,
    // then numbers them in list order, so they get back the order they were defined in.
    for (auto it = tracepoints_.rbegin(); it != tracepoints_.rend(); ++it) {
        auto more = upload_pieces(it->second);
        pieces.insert(pieces.end(), std::make_move_iterator(more.begin()),
                      std::make_move_iterator(more.end()));
    }
    return UploadCursor(std::move(pieces));
}

} // namespace tpagent::trace
