// See go_program.hpp.
#include "process/linux/go_program.hpp"
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

} // namespace tpagent::process
