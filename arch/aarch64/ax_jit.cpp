// The agent-expression compiler backend for AArch64: none yet. Trap tracepoints interpret
// their expressions; every translate() says so, and callers fall back to the interpreter.
#include "arch/compiler_backend.hpp"

namespace tpagent::arch {
namespace {

class InterpretOnly final : public bytecode::CompilerBackend {
  public:
    using bytecode::CompilerBackend::translate;
    const char* name() const override { return "interpreter only"; }
    Result<std::vector<std::uint8_t>> translate(const bytecode::Program&,
                                                const bytecode::HelperAddresses&) const override {
        return make_error(ErrorCode::Unsupported,
                          "agent expressions are interpreted on arm64 (no native compiler yet)");
    }
};

} // namespace

const bytecode::CompilerBackend& host_compiler_backend() {
    static const InterpretOnly backend;
    return backend;
}

} // namespace tpagent::arch
