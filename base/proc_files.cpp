#include "base/proc_files.hpp"
#include <algorithm>
#include <cstdlib>
#include <dirent.h>
#include <fcntl.h>
#include <fstream>
#include <sstream>
#include <unistd.h>

namespace tpagent {

std::string read_file(const std::string& path) {
    std::ifstream in(path, std::ios::binary);
    std::ostringstream ss;
    ss << in.rdbuf();
    return ss.str();
}

std::string read_link(const std::string& path) {
    char buf[4096];
    ssize_t n = readlink(path.c_str(), buf, sizeof buf);
    return n > 0 ? std::string(buf, static_cast<std::size_t>(n)) : std::string();
}

std::string status_field(pid_t tid, const char* name) {
    const std::string status = read_file("/proc/" + std::to_string(tid) + "/status");
    const std::string key = std::string("\n") + name + ":";
    const auto at = status.find(key);
    if (at == std::string::npos) return "";
    const auto from = status.find_first_not_of(" \t", at + key.size());
    if (from == std::string::npos) return "";
    const auto to = status.find('\n', from);
    return status.substr(from, to == std::string::npos ? std::string::npos : to - from);
}

std::vector<int> numbered_entries(const std::string& dir) {
    std::vector<int> out;
    if (DIR* d = opendir(dir.c_str())) {
        while (dirent* e = readdir(d)) {
            if (e->d_name[0] < '0' || e->d_name[0] > '9') continue;
            out.push_back(std::atoi(e->d_name));
        }
        closedir(d);
    }
    std::sort(out.begin(), out.end());
    return out;
}

std::vector<pid_t> list_tasks(pid_t pid) {
    return numbered_entries("/proc/" + std::to_string(pid) + "/task");
}

int open_process_file(pid_t pid, const std::function<bool(const std::string& entry)>& match) {
    for (const char* kind : {"/fd", "/map_files"}) {
        const std::string dir = "/proc/" + std::to_string(pid) + kind;
        DIR* d = opendir(dir.c_str());
        if (!d) continue;
        int fd = -1;
        while (dirent* e = readdir(d)) {
            const std::string entry = dir + "/" + e->d_name;
            if (e->d_name[0] != '.' && match(entry) &&
                (fd = open(entry.c_str(), O_RDWR | O_CLOEXEC)) >= 0)
                break;
        }
        closedir(d);
        if (fd >= 0) return fd;
    }
    return -1;
}

} // namespace tpagent
