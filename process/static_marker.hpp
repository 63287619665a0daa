// A static tracepoint marker in the traced program: a SystemTap SDT probe (`<sys/sdt.h>`,
// the `.note.stapsdt` notes of the executable and its libraries), at its run-time address.
#pragma once
#include "arch/sdt_argument.hpp"
#include <cstdint>
#include <string>
#include <vector>

namespace tpagent::process {

struct StaticMarker {
    std::uint64_t address = 0;              // the marker's instruction (a nop)
    std::string id;                         // "provider:name", gdb's marker ID
    std::string arguments;                  // as the note writes them ("-4@%eax 8@-16(%rbp)")
    std::uint64_t semaphore = 0;            // the probe's 2-byte enable counter; 0: none
    std::vector<arch::SdtArgument> decoded; // one per argument
    std::string object;                     // the file that holds it
};

} // namespace tpagent::process
