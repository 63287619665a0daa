// Compiled code run from a mapping of its own, as the in-process agent runs code tpagent
// translated for it: what the relocatable-code and staged-register tests run.
#pragma once
#include "fake_target.hpp"
#include <catch2/catch.hpp>
#include <cstdint>
#include <cstring>
#include <sys/mman.h>
#include <unistd.h>
#include <vector>

namespace tpagent::bytecode::testing {

// `code` copied `shift` bytes into a fresh mapping (written, then made read+execute), near
// `hint` if the kernel takes it.
class Relocated {
  public:
    Relocated(const std::vector<std::uint8_t>& code, std::size_t shift, void* hint = nullptr) {
        const auto page = static_cast<std::size_t>(sysconf(_SC_PAGESIZE));
        size_ = (shift + code.size() + page - 1) / page * page;
        void* mem = mmap(hint, size_, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
        REQUIRE(mem != MAP_FAILED);
        mem_ = static_cast<char*>(mem);
        std::memcpy(mem_ + shift, code.data(), code.size());
        __builtin___clear_cache(mem_ + shift, mem_ + shift + code.size());
        REQUIRE(mprotect(mem_, size_, PROT_READ | PROT_EXEC) == 0);
        fn_ = reinterpret_cast<CompiledFn>(mem_ + shift);
    }
    ~Relocated() { munmap(mem_, size_); }
    Relocated(const Relocated&) = delete;
    Relocated& operator=(const Relocated&) = delete;

    std::uintptr_t address() const { return reinterpret_cast<std::uintptr_t>(fn_); }
    // Run on t, with the direct window or not, and `registers` as Context::registers.
    Outcome run(const FakeTarget& t, bool window, const std::uint8_t* registers = nullptr) const {
        return run_on(
            t,
            [&](const Context& c, EvalOut& out) {
                Context with_registers = c;
                with_registers.registers = registers;
                return fn_(&with_registers, &out);
            },
            window);
    }

  private:
    char* mem_ = nullptr;
    std::size_t size_ = 0;
    CompiledFn fn_ = nullptr;
};

} // namespace tpagent::bytecode::testing
