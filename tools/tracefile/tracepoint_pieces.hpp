// Rebuilds tracepoints from the `tp` lines of a trace file: the qTfP/qTsP pieces
// `T..` (definition), `A..`/`S..` (action strings), `Z..` (source strings) and `V..`
// (hits and buffer usage), parsed with the agent's own tracepoint codec.
#pragma once
#include "trace/tracepoint.hpp"
#include "base/result.hpp"
#include <string_view>
#include <vector>

namespace tpagent::tracefile {

class TracepointPieces {
  public:
    // register_count bounds register numbers in actions and bytecode.
    explicit TracepointPieces(unsigned register_count) : register_count_(register_count) {}

    // One piece (the line after "tp "). A/S/Z/V pieces need their T piece first. Unknown
    // piece letters are skipped, as gdb does.
    Status add(std::string_view piece);

    std::vector<trace::Tracepoint> take() { return std::move(tracepoints_); }

  private:
    trace::Tracepoint* find(const trace::TracepointKey& key);
    Result<trace::Tracepoint*> owner(std::string_view fields, std::string_view& rest);

    unsigned register_count_;
    std::vector<trace::Tracepoint> tracepoints_;
};

} // namespace tpagent::tracefile
