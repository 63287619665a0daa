#include "arch/compiler_backend.hpp"
#if defined(__x86_64__)
#include "arch/x86_64/ax_jit.hpp"
#elif defined(__aarch64__)
#include "arch/aarch64/ax_jit.hpp"
#endif

namespace tpagent::arch {

#if defined(__x86_64__)
const bytecode::CompilerBackend& host_compiler_backend() {
    return x86_64::ax_backend();
}
#elif defined(__aarch64__)
const bytecode::CompilerBackend& host_compiler_backend() {
    return aarch64::ax_backend();
}
#endif

} // namespace tpagent::arch
