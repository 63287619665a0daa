// See go_program.hpp.
#include "process/linux/go_program.hpp"
#include <cstring>
#include <elf.h>
#include <fmt/format.h>

namespace tpagent::process {

bool has_go_sections(const Sections& sections) {
    return sections.named(".gopclntab") || sections.named(".go.buildinfo");
}

GoProgram go_program_of(pid_t pid) {
    ElfImage elf(fmt::format("/proc/{}/exe", pid));
    if (!elf.valid()) return GoProgram::NotGo;
    const Sections sections = sections_of(elf);
    if (!has_go_sections(sections)) return GoProgram::NotGo;
    const Elf64_Ehdr& eh = elf.header();
    // Linked against the C library: an interpreter, or (statically) cgo's entry.
    for (const Elf64_Phdr& p : elf.table<Elf64_Phdr>(eh.e_phoff, eh.e_phnum, eh.e_phentsize))
        if (p.p_type == PT_INTERP) return GoProgram::WithCgo;
    SymbolTable symbols(elf, sections, 0);
    if (symbols.address_of("x_cgo_init")) // runtime/cgo's C side (Go's own _cgo_init is in all)
        return GoProgram::WithCgo;
    return GoProgram::WithoutCgo;
}

namespace {
constexpr std::uint64_t kMaxGoroutines = 1u << 20;
constexpr std::uint64_t kMaxGoroutineStack = 64u << 20; // bytes of one stack read at most

template <class T> T word(const std::uint8_t* p) {
    T v;
    std::memcpy(&v, p, sizeof v);
    return v;
}
} // namespace

Result<std::vector<GoroutineStack>> goroutine_stacks(pid_t pid, const ReadMemory& read) {
    ElfImage elf(fmt::format("/proc/{}/exe", pid));
    if (!elf.valid() || elf.header().e_type != ET_EXEC)
        return make_error(ErrorCode::Unsupported,
                          "the Go program is not linked at fixed addresses: its goroutines "
                          "are not found");
    const Sections sections = sections_of(elf);
    SymbolTable symbols(elf, sections, 0);
    const auto allgs = symbols.address_of("runtime.allgs");
    if (!allgs) return make_error(ErrorCode::NotFound, "the Go program has no runtime.allgs");
    std::uint8_t slice[16];
    auto got = read(*allgs, slice);
    if (!got || *got != sizeof slice)
        return make_error(ErrorCode::SystemError, "runtime.allgs cannot be read");
    const auto array = word<std::uint64_t>(slice), count = word<std::uint64_t>(slice + 8);
    if (count > kMaxGoroutines)
        return make_error(ErrorCode::TooLarge,
                          fmt::format("{} goroutines: more than tpagent reads", count));
    std::vector<std::uint8_t> pointers(count * 8);
    got = read(array, pointers);
    if (!got || *got != pointers.size())
        return make_error(ErrorCode::SystemError, "runtime.allgs' array cannot be read");
    std::vector<GoroutineStack> stacks;
    for (std::uint64_t i = 0; i < count; ++i) {
        std::uint8_t bounds[16];
        got = read(word<std::uint64_t>(pointers.data() + 8 * i), bounds);
        if (!got || *got != sizeof bounds)
            return make_error(ErrorCode::SystemError, "a goroutine cannot be read");
        GoroutineStack s{word<std::uint64_t>(bounds), word<std::uint64_t>(bounds + 8)};
        if (s.lo == 0 && s.hi == 0) continue; // dead, its stack freed
        if (s.hi <= s.lo || s.hi - s.lo > kMaxGoroutineStack || s.lo % 8)
            return make_error(ErrorCode::Unsupported,
                              fmt::format("a goroutine's stack [0x{:x}, 0x{:x}) is not one "
                                          "tpagent reads",
                                          s.lo, s.hi));
        stacks.push_back(s);
    }
    return stacks;
}

} // namespace tpagent::process
