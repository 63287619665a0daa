// Hardware breakpoints and watchpoints (Z1..Z4) of one process, kept in the CPU's debug
// registers of every thread.
#pragma once
#include "base/result.hpp"
#include <cstdint>
#include <memory>
#include <optional>
#include <sys/types.h>

namespace tpagent::arch {

struct HwHit {
    int type = 0; // 1 hw breakpoint, 2 write, 3 read, 4 access
    std::uint64_t addr = 0;
};

class HwPoints {
  public:
    HwPoints();
    ~HwPoints();
    Status insert(int type, std::uint64_t addr, std::uint64_t len);
    Status remove(int type, std::uint64_t addr, std::uint64_t len);
    void clear();
    bool any() const;
    // Writes the current set into a stopped thread's debug registers.
    Status apply(pid_t tid);
    // After a hardware trap: which point fired (and resets the status register).
    std::optional<HwHit> triggered(pid_t tid);

  private:
    struct State;
    std::unique_ptr<State> state_;
};

} // namespace tpagent::arch
