// gdb's conditional breakpoints evaluated inside the program (RSP `Z0` with `;X` conditions):
// where every condition compiles to native code and a jump can replace the instruction, the
// breakpoint is carried by a jump to a pad, like a fast tracepoint's, whose call into the
// in-process agent runs the conditions and stops the thread only when one holds
// (inproc/breakpoint_hit.cpp). A false condition then costs about a fast tracepoint's hit
// instead of a stop, a trip through tpagent and a resume. Anything else stays a breakpoint
// instruction whose conditions tpagent evaluates at each stop.
#pragma once
#include "experiment/fast_tracepoints.hpp"
#include "bytecode/compiler.hpp"
#include "process/debug_points.hpp"
#include "process/target.hpp"
#include "base/result.hpp"
#include <cstdint>
#include <map>
#include <string>
#include <vector>

namespace tpagent::experiment {

class InprocBreakpoints {
  public:
    explicit InprocBreakpoints(FastTracepoints& fast) : fast_(fast) {}

    // Off: every breakpoint stays an instruction (`monitor set inproc-breakpoints off`).
    void set_enabled(bool on) { enabled_ = on; }
    bool enabled() const { return enabled_; }

    // gdb's breakpoint at `addr`, just inserted with `code`, moves into the program if it
    // can; why not otherwise (it then stays as it was).
    Status carry(process::Target& inferior, std::uint64_t addr,
                 const process::BreakpointCode& code);
    // gdb removed the breakpoint at `addr`.
    void forget(std::uint64_t addr) { outcomes_.erase(addr); }
    // The program exec'd (or another process is served): its breakpoints and their code went
    // with the old image (gdb puts the new image's in anew).
    void forget_image() {
        outcomes_.clear();
        placed_.clear();
    }
    // `monitor breakpoints`: one line per breakpoint with conditions of `inferior`, where they
    // run; none without a program (gdb does not remove a killed program's breakpoints).
    std::vector<std::string> lines(process::Target* inferior) const;

  private:
    Status try_carry(process::Target& inferior, std::uint64_t addr,
                     const process::BreakpointCode& code);

    FastTracepoints& fast_;
    bool enabled_ = true;
    pid_t pid_ = 0; // the process the two maps below are of
    // Breakpoints with conditions, by address: why tpagent evaluates them (empty: it does
    // not, they were carried into the program).
    std::map<std::uint64_t, std::string> outcomes_;
    // The record placed for each address and the conditions it runs: gdb inserts the same
    // breakpoint again and again (around each step over it), and the same record and pad
    // serve while the pad lives (FastSites::keeps_carrier).
    struct Placed {
        std::vector<std::vector<std::uint8_t>> conditions;
        bytecode::StagedRegisterLayout staged; // the code loads registers from these places
        std::uint64_t record = 0;
    };
    std::map<std::uint64_t, Placed> placed_;
};

} // namespace tpagent::experiment
