#include "arch/x86_64/decoder.hpp"
#include <fmt/format.h>

namespace tpagent::arch::x86_64 {
namespace {

const ZydisDecoder& decoder() {
    static const ZydisDecoder d = [] {
        ZydisDecoder z;
        ZydisDecoderInit(&z, ZYDIS_MACHINE_MODE_LONG_64, ZYDIS_STACK_WIDTH_64);
        return z;
    }();
    return d;
}

} // namespace

Result<Decoded> decode(std::span<const std::uint8_t> bytes, std::uint64_t addr) {
    Decoded d;
    const ZyanStatus st =
        ZydisDecoderDecodeFull(&decoder(), bytes.data(), bytes.size(), &d.insn, d.ops);
    if (st == ZYDIS_STATUS_NO_MORE_DATA)
        return make_error(ErrorCode::Unsupported,
                          fmt::format("instruction at {:#x} is longer than the {} bytes given",
                                      addr, bytes.size()));
    if (ZYAN_FAILED(st))
        return make_error(ErrorCode::Unsupported,
                          fmt::format("cannot decode the instruction at {:#x}", addr));
    return d;
}

} // namespace tpagent::arch::x86_64
