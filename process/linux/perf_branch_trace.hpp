// The hardware branch-trace backends, through Linux perf: Intel's Branch Trace Store, which
// writes each taken branch's source and destination into a ring that perf maps for us, and
// the check for Intel Processor Trace (which tpagent does not record; see the README).
#pragma once
#include "base/result.hpp"
#include "process/linux/branch_ring.hpp"
#include <cstddef>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <sys/types.h>
#include <vector>

namespace tpagent::process {

class PerfBranchStore {
  public:
    // One BTS record as perf writes it with PERF_SAMPLE_IP | PERF_SAMPLE_ADDR.
    struct BtsSample {
        std::uint32_t type;
        std::uint16_t misc, size; // perf_event_header
        std::uint64_t from, to;
    };
    // BTS for thread `tid` into a ring of about `size_bytes` (a power of two of pages, as perf
    // allows; less if the system gives less). The error says why the CPU or kernel cannot.
    static Result<std::unique_ptr<PerfBranchStore>> open(pid_t tid, std::size_t size_bytes);
    ~PerfBranchStore();
    PerfBranchStore(const PerfBranchStore&) = delete;
    PerfBranchStore& operator=(const PerfBranchStore&) = delete;

    std::size_t size() const { return data_size_; }
    // Moves the branches written since the last call into `ring` (the thread is stopped).
    void drain(BranchRing& ring);

  private:
    PerfBranchStore() = default;
    std::vector<BtsSample> read_back(std::uint64_t head) const;
    int fd_ = -1;
    void* map_ = nullptr;
    std::size_t map_size_ = 0;
    const std::uint8_t* data_ = nullptr;
    std::size_t data_size_ = 0;
    std::uint64_t drained_ = 0; // data_head at the last drain
};

// Why Qbtrace:pt is refused here: no Intel Processor Trace, or tpagent does not decode it.
std::string why_no_intel_pt();

} // namespace tpagent::process
