// See go_program.hpp.
#include "process/linux/go_program.hpp"
#include <algorithm>
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

// The addresses of the runtime's variables `names`, in a program linked at fixed addresses,
// and the code of those of `functions` it has (each up to the next function's start).
struct RuntimeSymbols {
    std::vector<std::uint64_t> variables;
    std::vector<CodeRange> functions;
};
Result<RuntimeSymbols> runtime_symbols(pid_t pid, std::initializer_list<const char*> names,
                                       std::initializer_list<const char*> functions = {}) {
    ElfImage elf(fmt::format("/proc/{}/exe", pid));
    if (!elf.valid() || elf.header().e_type != ET_EXEC)
        return make_error(ErrorCode::Unsupported,
                          "the Go program is not linked at fixed addresses: its runtime's "
                          "variables are not found");
    const Sections sections = sections_of(elf);
    SymbolTable symbols(elf, sections, 0);
    RuntimeSymbols found;
    for (const char* name : names) {
        const auto address = symbols.address_of(name);
        if (!address)
            return make_error(ErrorCode::NotFound, fmt::format("the Go program has no {}", name));
        found.variables.push_back(*address);
    }
    if (functions.size() == 0) return found; // (no sort of every function's address)
    std::vector<std::uint64_t> starts = symbols.function_addresses();
    std::ranges::sort(starts);
    for (const char* name : functions) {
        const auto start = symbols.address_of(name);
        if (!start) continue;
        const auto next = std::ranges::upper_bound(starts, *start);
        if (next != starts.end()) found.functions.push_back({*start, *next});
    }
    return found;
}

Result<std::uint64_t> read_word(const ReadMemory& read, std::uint64_t address, const char* what) {
    std::uint8_t bytes[8];
    auto got = read(address, bytes);
    if (!got || *got != sizeof bytes)
        return make_error(ErrorCode::SystemError, fmt::format("{} cannot be read", what));
    return word<std::uint64_t>(bytes);
}
} // namespace

Result<GoThreadWords> go_thread_words(pid_t pid, const ReadMemory& read) {
    constexpr std::int32_t kGM = 48;      // after stack (16), stackguard0/1, _panic, _defer
    constexpr std::int32_t kMProcid = 72; // after g0, morebuf (gobuf: 7 words), divmod + pad
    constexpr std::int32_t kMTls = kMProcid + 8 + 8 + 40 + 8;
    // (Where x28 is not yet the thread's goroutine: a new thread's, a new program's. The
    // symbols of assembly functions end in .abi0 since Go 1.17.)
    auto vars = runtime_symbols(pid, {"runtime.g0", "runtime.m0"},
                                {"runtime.clone.abi0", "runtime.clone", "runtime.rt0_go.abi0",
                                 "runtime.rt0_go", "_rt0_arm64_linux"});
    if (!vars) return vars.error();
    const std::uint64_t g0 = vars->variables[0], m0 = vars->variables[1];
    const auto unlike = [](const char* what) {
        return make_error(ErrorCode::Unsupported,
                          fmt::format("the Go runtime's threads are not laid out as tpagent "
                                      "knows ({})",
                                      what));
    };
    auto g0_m = read_word(read, g0 + kGM, "runtime.g0");
    if (!g0_m) return g0_m.error();
    if (*g0_m != m0) return unlike("runtime.g0's m is not runtime.m0");
    auto procid = read_word(read, m0 + kMProcid, "runtime.m0");
    if (!procid) return procid.error();
    if (*procid != static_cast<std::uint64_t>(pid)) return unlike("m0's procid is not the pid");
    auto gsignal = read_word(read, m0 + kMProcid + 8, "runtime.m0");
    if (!gsignal) return gsignal.error();
    auto gsignal_m = read_word(read, *gsignal + kGM, "m0's gsignal");
    if (!gsignal_m) return gsignal_m.error();
    if (*gsignal_m != m0) return unlike("m0's gsignal is not on m0");
    for (std::int32_t i = 0; i < 6; ++i) {
        auto tls = read_word(read, m0 + kMTls + 8 * i, "runtime.m0");
        if (!tls) return tls.error();
        if (*tls != 0) return unlike("m0's tls words are in use");
    }
    return GoThreadWords{kGM, kMTls, std::move(vars->functions)};
}

Result<std::vector<GoroutineStack>> goroutine_stacks(pid_t pid, const ReadMemory& read) {
    auto vars = runtime_symbols(pid, {"runtime.allgs"});
    if (!vars) return vars.error();
    std::uint8_t slice[16];
    auto got = read(vars->variables.front(), slice);
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
