// All tracepoint locations gdb has downloaded, keyed by (number, address).
//
// A definition arrives as several QTDP packets; the table keeps it aside until the last one
// (no trailing '-') and only then stores it, so a bad or abandoned packet sequence never
// leaves a half-defined tracepoint behind. Any error drops the definition under
// construction and leaves the table as it was.
//
// Redefining an existing key:
//  - identical definition (gdb re-sends every location when a shared library loads):
//    accepted; counters carry over, the enabled flag is taken from the new packet, sources
//    are replaced by the QTDPsrc packets that follow;
//  - different definition: replaces the old one (counters reset); during a run, the next
//    hit collects by the new one (gdb re-sends tracepoints whose locations or actions changed
//    as libraries come and go), except for a fast tracepoint compiled into the program
//    (mark_in_program): refused with BadTracepoint until the run ends.
// Sources (QTDPsrc) of a tracepoint the table does not have are ignored, as gdbserver does.
#pragma once
#include "trace/tracepoint.hpp"
#include "trace/tracepoint_codec.hpp"
#include "trace/upload_cursor.hpp"
#include "base/result.hpp"
#include <map>
#include <optional>
#include <set>

namespace tpagent::trace {

class TracepointTable {
  public:
    // register_count bounds register numbers in bytecode and M actions (the target
    // description's register count): the packets given to define() are parsed with it.
    explicit TracepointTable(unsigned register_count) : register_count_(register_count) {}
    unsigned register_count() const { return register_count_; }

    enum class Defined : std::uint8_t {
        Pending,   // more packets of this definition are expected
        Added,     // a new key was stored
        Identical, // same definition as the stored one; nothing changed
        Replaced,  // the stored definition was replaced
    };
    struct DefineOutcome {
        Defined what = Defined::Pending;
        TracepointKey key;
    };
    // One QTDP packet. Any packet but a valid action packet continuing it drops the pending
    // definition: complete_pending() first to keep it.
    Result<DefineOutcome> define(TracepointPacket packet);
    bool has_pending() const { return pending_.has_value(); }
    // gdb leaves a definition unfinished ("more follows", then nothing) when it cannot compile
    // the actions: what arrived, all valid, defines the tracepoint, as gdbserver takes it.
    Result<std::optional<DefineOutcome>> complete_pending();

    // One QTDPsrc packet; the first source after a (re)definition replaces the old list.
    void add_source(SourcePacket packet);

    // QTEnable / QTDisable.
    Status set_enabled(const TracepointKey& key, bool enabled);

    // QTinit.
    void clear();

    // While a trace runs, a different redefinition of an existing key is refused.
    void set_running(bool running) {
        running_ = running;
        if (!running) in_program_.clear();
    }
    // A fast tracepoint whose definition the in-process agent holds for this run.
    void mark_in_program(const TracepointKey& key) { in_program_.insert(key); }
    void unmark_in_program(const TracepointKey& key) { in_program_.erase(key); }
    bool running() const { return running_; }

    Tracepoint* find(const TracepointKey& key);
    const Tracepoint* find(const TracepointKey& key) const;
    const std::map<TracepointKey, Tracepoint>& all() const { return tracepoints_; }
    std::size_t size() const { return tracepoints_.size(); }

    // Counters for qTP; record_hit adds one hit and its frame bytes, record_step only bytes.
    void reset_counters();
    void record_hit(const TracepointKey& key, std::uint64_t frame_bytes);
    void record_step(const TracepointKey& key, std::uint64_t frame_bytes);

    // qTfP: every piece of every tracepoint, by number then address, the last first.
    UploadCursor upload() const;

  private:
    struct Pending {
        TracepointDefinition definition;
        bool stepping = false;
    };
    // A QTDP action packet, parsed or not: it continues the pending definition or drops it.
    Result<DefineOutcome> add_actions(Result<ActionPacket> packet);
    Result<DefineOutcome> finish(TracepointDefinition definition);

    unsigned register_count_;
    bool running_ = false;
    std::set<TracepointKey> in_program_;
    std::optional<Pending> pending_;
    std::map<TracepointKey, Tracepoint> tracepoints_;
    // Keys whose next QTDPsrc starts a fresh source list.
    std::set<TracepointKey> sources_restart_;
};

} // namespace tpagent::trace
