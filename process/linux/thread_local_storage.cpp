// gdb's qGetTLSAddr without libthread_db: a thread's variable in a module's TLS block, read
// from the C library's own structures.
// - glibc: the one layout fact it keeps private, where a link map holds its module's TLS id,
//   it publishes for libthread_db (`_thread_db_link_map_l_tls_modid`, a {bits, count, offset}
//   descriptor, in libc.so or in a static program). The rest is the ABI: the thread pointer's
//   TCB starts with (arm64) or holds at 8 (x86-64) the thread's DTV, an array of
//   {pointer, to_free} entries indexed by module id.
// - musl: the thread pointer is its struct pthread on x86-64, whose second word is the DTV, an
//   array of plain pointers (on arm64 the DTV is the word below the thread pointer). Module ids
//   go in load order to the modules with TLS, the program's own first: tpagent finds the
//   program's (id 1), not a library's.
// A statically linked program has one module, id 1 (gdb sends link map 0 for it).
#include "process/linux/elf_image.hpp"
#include "arch/g_register.hpp"
#include "process/linux/linux_process.hpp"
#include "process/linux/svr4_libraries.hpp"
#include "base/proc_files.hpp"
#include <cstring>
#include <fmt/format.h>

namespace tpagent::process {

namespace {

#if defined(__x86_64__)
constexpr const char* kThreadPointer = "fs_base";
constexpr std::int64_t kGlibcDtvAt = 8; // tcbhead_t {tcb, dtv, self, ...}
constexpr std::int64_t kMuslDtvAt = 8;  // struct pthread {self, dtv, ...}
#else
constexpr const char* kThreadPointer = "tpidr";
constexpr std::int64_t kGlibcDtvAt = 0; // tcbhead_t {dtv, private}
constexpr std::int64_t kMuslDtvAt = -8; // struct pthread {..., dtv} ends at the thread pointer
#endif
constexpr std::uint64_t kUnallocated = ~std::uint64_t{0}; // glibc's TLS_DTV_UNALLOCATED
constexpr std::uint64_t kMaxModules = 1u << 20;           // more module ids than any program

Error no_tls(std::string why) {
    return make_error(ErrorCode::Unsupported,
                      fmt::format("cannot find thread-local storage: {}", why));
}

// musl's C library, which is its dynamic loader too (/lib/ld-musl-ARCH.so.1, a link to
// /usr/lib/ARCH-linux-musl/libc.so on Debian).
bool is_musl(std::string_view path) {
    return path.find("musl") != std::string_view::npos;
}

} // namespace

Result<std::uint64_t> LinuxProcess::read_word(std::uint64_t addr, std::size_t bytes) {
    std::uint64_t value = 0;
    auto got = read_memory(addr, std::span(reinterpret_cast<std::uint8_t*>(&value), bytes));
    if (!got || *got != bytes)
        return make_error(ErrorCode::MemoryAccess,
                          fmt::format("cannot read memory at 0x{:x}", addr));
    return value; // (little-endian: both targets)
}

LinuxProcess::TlsLayout LinuxProcess::tls_layout() {
    if (tls_layout_) return *tls_layout_;
    // glibc's descriptor, in its C library or in the (static) program; musl's marks.
    TlsLayout layout;
    bool c_library = false;
    for (const auto& [path, start] : mapped_files(pid_)) {
        layout.musl = layout.musl || is_musl(path);
        const bool program = path == executable_;
        if (!program && !is_c_library(path)) continue;
        c_library = c_library || !program;
        constexpr std::string_view kModuleId = "_thread_db_link_map_l_tls_modid";
        const auto symbols =
            mapped_file_symbols(pid_, path, start, {kModuleId, "__init_tp"}, !program);
        if (auto it = symbols.find(kModuleId); !layout.glibc_module_id && it != symbols.end())
            layout.glibc_module_id = it->second;
        layout.musl = layout.musl || (program && symbols.count("__init_tp") != 0);
    }
    // Kept once found, or once the C library is mapped (a dynamic program stopped at its
    // first instruction has only its loader so far).
    if (layout.glibc_module_id || layout.musl || c_library) tls_layout_ = layout;
    return layout;
}

Result<LinuxProcess::TlsModule> LinuxProcess::tls_module(std::uint64_t link_map) {
    const TlsLayout layout = tls_layout();
    const std::optional<std::uint64_t> descriptor = layout.glibc_module_id;
    const bool musl = layout.musl;
    if (descriptor) {
        if (link_map == 0) return TlsModule{1, false};
        std::uint32_t field[3] = {}; // bits, count, offset
        if (auto got = read_memory(*descriptor,
                                   std::span(reinterpret_cast<std::uint8_t*>(field), sizeof field));
            !got || *got != sizeof field)
            return no_tls("glibc's description of a link map cannot be read");
        const std::uint32_t bits = field[0];
        if (bits != 32 && bits != 64) return no_tls(fmt::format("a {}-bit module id", bits));
        auto id = read_word(link_map + field[2], bits / 8);
        if (!id) return id.error();
        if (*id == 0 || *id > kMaxModules)
            return no_tls(fmt::format("the module at 0x{:x} has no TLS block", link_map));
        return TlsModule{*id, false};
    }
    if (!musl) return no_tls("neither glibc (with libthread_db's descriptions) nor musl");
    if (link_map == 0) return TlsModule{1, true};
    // The program's own link map is the first of the chain (main-lm).
    const auto main_lm = svr4_main_link_map(
        read_file(fmt::format("/proc/{}/auxv", pid_)),
        [this](std::uint64_t addr, std::span<std::uint8_t> out) { return read_all(addr, out); });
    if (main_lm.value_or(0) != link_map)
        return no_tls("a musl library's TLS (only the program's own is found)");
    return TlsModule{1, true};
}

Result<std::uint64_t> LinuxProcess::thread_local_address(pid_t tid, std::uint64_t offset,
                                                         std::uint64_t link_map) {
    if (!has_thread(tid)) return make_error(ErrorCode::NoProcess, "no such thread");
    auto module = tls_module(link_map);
    if (!module) return module.error();

    std::vector<bool> available;
    auto g = registers().read(tid, available, false);
    if (!g) return g.error();
    const auto regs = arch_.registers();
    std::uint64_t tp = 0;
    for (unsigned i = 0; i < regs.size(); ++i)
        if (std::strcmp(regs[i].name, kThreadPointer) == 0)
            tp = arch::g_register(arch_, *g, available, i).value_or(0);
    if (tp == 0) return no_tls(fmt::format("thread {} has no thread pointer", tid));

    const std::int64_t dtv_at = module->musl ? kMuslDtvAt : kGlibcDtvAt;
    const std::uint64_t entry_bytes = module->musl ? 8 : 16; // musl: pointers; glibc: dtv_t
    auto dtv = read_word(tp + static_cast<std::uint64_t>(dtv_at), 8);
    if (!dtv) return dtv.error();
    auto block = read_word(*dtv + module->id * entry_bytes, 8);
    if (!block) return block.error();
    if (*block == kUnallocated || *block == 0)
        return make_error(
            ErrorCode::NotFound,
            fmt::format("thread {} has not allocated module {}'s TLS yet", tid, module->id));
    return *block + offset;
}

} // namespace tpagent::process
