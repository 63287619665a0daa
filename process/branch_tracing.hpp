// Branch trace (record btrace) of a traced program, per thread. A part of process::Target
// (Target::branch_tracing); this base records nothing: every call fails as for a target without
// branch tracing.
#pragma once
#include "base/result.hpp"
#include "process/branch_trace.hpp"
#include <cstdint>
#include <sys/types.h>
#include <vector>

namespace tpagent::process {

class BranchTracing {
  public:
    virtual ~BranchTracing() = default;

    // Where the hardware has no BTS, the software recorder runs a recorded thread from branch
    // to branch as `method` says.
    struct Request {
        BranchTraceFormat format = BranchTraceFormat::Bts;
        std::uint32_t size = 0x10000;
        BranchStepMethod method = BranchStepMethod::BlockEnds;
    };
    virtual Result<BranchTraceConfig> enable(pid_t /*tid*/, const Request& /*request*/) {
        return make_error(ErrorCode::Unsupported, "Target does not support branch tracing.");
    }
    virtual Status disable(pid_t /*tid*/) {
        return make_error(ErrorCode::NotAllowed, "Branch tracing not enabled.");
    }
    virtual Result<BranchTraceConfig> config(pid_t /*tid*/) const {
        return make_error(ErrorCode::NotAllowed, "Btrace not enabled.");
    }
    virtual Result<std::vector<BranchBlock>> read(pid_t /*tid*/, BranchTraceRead /*kind*/) {
        return make_error(ErrorCode::NotAllowed, "Btrace not enabled.");
    }
};

} // namespace tpagent::process
