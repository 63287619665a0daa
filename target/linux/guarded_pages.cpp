#include "target/linux/guarded_pages.hpp"
#include "base/proc_files.hpp"
#include <charconv>
#include <string>

namespace tpagent::agent {
namespace {

// "start-end perms ..." of a mapping's first line: the range, or nothing for other lines.
bool mapping_range(std::string_view line, std::uint64_t& start, std::uint64_t& end) {
    const auto dash = line.find('-');
    const auto space = line.find(' ');
    if (dash == std::string_view::npos || space == std::string_view::npos || dash > space)
        return false;
    auto a = std::from_chars(line.data(), line.data() + dash, start, 16);
    auto b = std::from_chars(line.data() + dash + 1, line.data() + space, end, 16);
    return a.ec == std::errc() && a.ptr == line.data() + dash && b.ec == std::errc() &&
           b.ptr == line.data() + space;
}

} // namespace

bool guarded_in_smaps(std::string_view smaps, std::uint64_t addr) {
    bool inside = false;
    while (!smaps.empty()) {
        const auto nl = smaps.find('\n');
        const std::string_view line = smaps.substr(0, nl);
        smaps = nl == std::string_view::npos ? std::string_view() : smaps.substr(nl + 1);
        std::uint64_t start = 0, end = 0;
        if (mapping_range(line, start, end)) {
            inside = addr >= start && addr < end;
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

} // namespace tpagent::agent
