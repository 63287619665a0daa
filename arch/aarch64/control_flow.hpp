// aarch64 control flow, as the branch recorder sees it (Architecture::decode_flow).
#pragma once
#include "arch/control_flow.hpp"
#include "base/result.hpp"
#include <cstdint>
#include <span>

namespace tpagent::arch::aarch64 {

Result<FlowInstruction> decode_flow(std::span<const std::uint8_t> code, std::uint64_t addr);

} // namespace tpagent::arch::aarch64
