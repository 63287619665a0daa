#include "bytecode/compiler.hpp"
#include "bytecode/runtime.hpp"
#include <cerrno>
#include <cstring>
#include <sys/mman.h>
#include <unistd.h>
#include <utility>

namespace tpagent::bytecode {

namespace {
template <typename F> std::uint64_t address_of(F* f) {
    return reinterpret_cast<std::uintptr_t>(f);
}
} // namespace

HelperAddresses host_helper_addresses() {
    HelperAddresses h;
    h.read = address_of(&rt::read);
    h.reg = address_of(&rt::reg);
    h.getv = address_of(&rt::getv);
    h.setv = address_of(&rt::setv);
    h.tracev = address_of(&rt::tracev);
    h.trace = address_of(&rt::trace);
    h.tracenz = address_of(&rt::tracenz);
    h.printf = address_of(&rt::printf);
    return h;
}

CompiledProgram::CompiledProgram(CompiledProgram&& o) noexcept
    : program_(std::move(o.program_)), code_(std::exchange(o.code_, nullptr)),
      size_(std::exchange(o.size_, 0)), fn_(std::exchange(o.fn_, nullptr)) {}

CompiledProgram& CompiledProgram::operator=(CompiledProgram&& o) noexcept {
    if (this != &o) {
        if (code_) munmap(code_, size_);
        program_ = std::move(o.program_);
        code_ = std::exchange(o.code_, nullptr);
        size_ = std::exchange(o.size_, 0);
        fn_ = std::exchange(o.fn_, nullptr);
    }
    return *this;
}

CompiledProgram::~CompiledProgram() {
    if (code_) munmap(code_, size_);
}

Result<std::uint64_t> CompiledProgram::evaluate(const Context& context) const {
    EvalOut out;
    const EvalStatus s = run(context, out);
    if (s != EvalStatus::Ok) return describe_failure(*program_, s, out);
    return out.value;
}

Result<CompiledProgram> compile(const Program& program, const CompilerBackend& backend) {
    CompiledProgram compiled;
    compiled.program_ = std::make_shared<const Program>(program);
    auto code = backend.translate(*compiled.program_);
    if (!code) return code.error();

    const std::size_t page = static_cast<std::size_t>(sysconf(_SC_PAGESIZE));
    const std::size_t size = (code->size() + page - 1) / page * page;
    void* mem = mmap(nullptr, size, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (mem == MAP_FAILED)
        return make_error(ErrorCode::SystemError, std::string("mmap: ") + std::strerror(errno));
    std::memcpy(mem, code->data(), code->size());
    __builtin___clear_cache(static_cast<char*>(mem), static_cast<char*>(mem) + code->size());
    if (mprotect(mem, size, PROT_READ | PROT_EXEC) != 0) {
        const int err = errno;
        munmap(mem, size);
        return make_error(ErrorCode::SystemError, std::string("mprotect: ") + std::strerror(err));
    }
    compiled.code_ = mem;
    compiled.size_ = size;
    compiled.fn_ = reinterpret_cast<CompiledFn>(mem);
    return compiled;
}

} // namespace tpagent::bytecode
