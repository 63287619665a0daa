// tpagent's side of the memory shared with the in-process agent (agent/inproc/): finding it
// in a program, mapping it, and reading frames out of it without ptrace.
#pragma once
#include "inproc/shared_region.hpp"
#include "base/result.hpp"
#include <cstdint>
#include <functional>
#include <memory>
#include <span>
#include <sys/types.h>
#include <utility>
#include <vector>

namespace tpagent::agent {

class InprocRegion {
  public:
    // The region of the agent library loaded in process pid; NotFound if it is not loaded.
    static Result<std::unique_ptr<InprocRegion>> open(pid_t pid);
    ~InprocRegion();
    InprocRegion(const InprocRegion&) = delete;
    InprocRegion& operator=(const InprocRegion&) = delete;

    pid_t pid() const { return pid_; }
    inproc::Header& header() const { return *inproc::header_of(local_); }
    void* local() const { return local_; }
    // The program's address of a region offset.
    std::uint64_t remote(std::uint64_t offset) const { return header().region_address + offset; }

    // Start of a run, every program thread stopped: a new generation; chunks free, except that
    // chunks still owned (an owner may be stopped mid-record) are retired for one run.
    void reset_chunks();
    // Hands every complete staged record to `take` (oldest first per chunk) and frees the
    // chunks their owners sealed. Safe while program threads collect.
    using RecordSink =
        std::function<void(const inproc::RecordHeader&, std::span<const std::uint8_t> frame)>;
    void drain(const RecordSink& take);
    // Rewrites the readable ranges (sorted, disjoint) under the seqlock.
    void set_readable_ranges(std::span<const inproc::ReadableRange> ranges);
    // The readable mappings of process pid (from /proc/PID/maps), merged, for the above.
    static std::vector<inproc::ReadableRange> readable_ranges_of(pid_t pid);

  private:
    InprocRegion(pid_t pid, void* local) : pid_(pid), local_(local) {}
    pid_t pid_;
    void* local_;
    std::vector<std::pair<std::uint64_t, std::size_t>> pending_; // drain order (sequence, chunk)
};

} // namespace tpagent::agent
