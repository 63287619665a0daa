// gdb's conditional breakpoints and agent-style dprintfs evaluated inside the program (RSP
// `Z0` with `;X` conditions, `;cmds:` commands): where every condition and command compiles to
// native code and a jump can replace the instruction, the breakpoint is carried by a jump to a
// pad, like a fast tracepoint's, whose call into the in-process agent runs the conditions and
// stops the thread only when one holds, or, for a dprintf, formats its line into the shared
// buffer's ring, from which tpagent prints it (inproc/breakpoint_hit.cpp). A false condition
// or a dprintf's line then costs about a fast tracepoint's hit instead of a stop, a trip
// through tpagent and a resume. Anything else stays a breakpoint instruction whose conditions
// and commands tpagent evaluates at each stop.
#pragma once
#include "experiment/fast_tracepoints.hpp"
#include "bytecode/compiler.hpp"
#include "process/debug_points.hpp"
#include "process/target.hpp"
#include "base/result.hpp"
#include <cstdint>
#include <functional>
#include <map>
#include <string_view>
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
    // with the old image (gdb puts the new image's in anew), and its agent's lines.
    void forget_image() {
        outcomes_.clear();
        placed_.clear();
        commands_carried_ = false;
        printed_ = 0;
        dropped_said_ = 0;
    }

    // The lines dprintfs printed in the program since the last call, in order, each given to
    // `print`; a command that failed there is logged as tpagent logs its own, and lines lost
    // to a full ring are said in one line of their own. True while the program may print more
    // (a dprintf was carried into it): the caller asks again a little later.
    using LineSink = std::function<void(std::string_view)>;
    bool take_printed(const LineSink& print);
    // `monitor breakpoints`: one line per breakpoint with conditions or commands of `inferior`,
    // where they run, and one of the lines dprintfs printed in the program; none without a
    // program (gdb does not remove a killed program's breakpoints).
    std::vector<std::string> lines(process::Target* inferior) const;

  private:
    Status try_carry(process::Target& inferior, std::uint64_t addr,
                     const process::BreakpointCode& code);

    FastTracepoints& fast_;
    bool enabled_ = true;
    pid_t pid_ = 0; // the process the two maps below are of
    // Breakpoints with conditions or commands, by address: why tpagent evaluates them
    // (empty: it does not, they were carried into the program), and what they have.
    struct Outcome {
        std::string why;
        const char* what; // "condition", "commands", "condition and commands"
    };
    std::map<std::uint64_t, Outcome> outcomes_;
    // The record placed for each address and the conditions it runs: gdb inserts the same
    // breakpoint again and again (around each step over it), and the same record and pad
    // serve while the pad lives (FastSites::keeps_carrier).
    struct Placed {
        std::vector<std::vector<std::uint8_t>> conditions, commands;
        bytecode::StagedRegisterLayout staged; // the code loads registers from these places
        std::uint64_t record = 0;
    };
    std::map<std::uint64_t, Placed> placed_;
    bool commands_carried_ = false;  // some dprintf prints into pid_'s agent's ring
    std::uint64_t printed_ = 0;      // lines taken from it
    std::uint64_t dropped_said_ = 0; // lines lost to a full ring, said so far
};

} // namespace tpagent::experiment
