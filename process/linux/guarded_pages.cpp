#include "process/linux/guarded_pages.hpp"
#include "base/proc_files.hpp"
#include "base/proc_maps.hpp"
#include <string>

namespace tpagent::process {

bool guarded_in_smaps(std::string_view smaps, std::uint64_t addr) {
    bool inside = false;
    while (!smaps.empty()) {
        const auto nl = smaps.find('\n');
        const std::string_view line = smaps.substr(0, nl);
        smaps = nl == std::string_view::npos ? std::string_view() : smaps.substr(nl + 1);
        if (auto mapping = parse_maps_line(line)) {
            inside = addr >= mapping->start && addr < mapping->end;
        } else if (inside && line.starts_with("VmFlags:")) {
            std::string_view flags = line.substr(8);
            while (!flags.empty()) {
                const auto sp = flags.find(' ');
                if (flags.substr(0, sp) == "bt") return true;
                flags = sp == std::string_view::npos ? std::string_view() : flags.substr(sp + 1);
            }
            return false;
        }
    }
    return false;
}

bool branch_target_guarded(pid_t pid, std::uint64_t addr) {
    return guarded_in_smaps(read_file("/proc/" + std::to_string(pid) + "/smaps"), addr);
}

} // namespace tpagent::process
