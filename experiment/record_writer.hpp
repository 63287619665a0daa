// Fast tracepoints' records as the in-process collector reads them: written into a shared buffer
// being configured (after its registers are described), with their actions and expression
// code, at QTStart or for a fast tracepoint joining a run.
#pragma once
#include "experiment/shared_buffer.hpp"
#include "trace/tracepoint.hpp"
#include "arch/sdt_argument.hpp"
#include "base/result.hpp"
#include "bytecode/compiler.hpp"
#include <cstdint>
#include <functional>
#include <span>

namespace tpagent::experiment {

class RecordWriter {
  public:
    // Puts native code into the program near an address and says where; an error leaves the
    // expression interpreted.
    using CodePlacer =
        std::function<Result<std::uint64_t>(std::uint64_t near, std::span<const std::uint8_t>)>;

    // `used`: bytes of the shared buffer's configuration already taken (a run's records).
    RecordWriter(SharedBuffer& shared, CodePlacer place_code, std::uint64_t used = 0);
    std::uint64_t used() const { return area_.used(); }

    // Records, where inproc::tracepoint_record finds them by index: take them first.
    Result<std::span<inproc::TracepointRecord>> records(std::size_t count) {
        return area_.take<inproc::TracepointRecord>(count, sizeof(inproc::TracepointRecord));
    }
    // `rec` collects by `def`: condition, actions, what the collector fills in, frame bound.
    // `marker`: a static tracepoint's SDT marker arguments (`collect $_sdata`).
    Status write(inproc::TracepointRecord& rec, const trace::TracepointDefinition& def,
                 std::span<const arch::SdtArgument> marker = {});
    // An expression (action or condition): native code placed near `near` when the compiler
    // takes it and there is room in the program; else interpreted.
    Result<inproc::ActionRecord> expression(const trace::Expression& e, std::uint64_t near);

  private:
    Result<inproc::ActionRecord> action(const trace::Action& action, std::uint64_t near,
                                        std::span<const arch::SdtArgument> marker);

    SharedBuffer& shared_;
    SharedBufferConfig area_;
    CodePlacer place_code_;
    bytecode::HelperAddresses helpers_;
};

} // namespace tpagent::experiment
