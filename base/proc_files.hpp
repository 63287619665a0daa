// Small reads of the kernel's per-process files (/proc/PID/...).
#pragma once
#include <functional>
#include <string>
#include <sys/types.h>
#include <vector>

namespace tpagent {

// The whole file; empty if it cannot be read.
std::string read_file(const std::string& path);
// The target of a symbolic link; empty if it cannot be read.
std::string read_link(const std::string& path);
// A field of /proc/TID/status ("TracerPid", "State", "Tgid"), its value without the leading
// blanks; empty if the thread is gone or has no such field.
std::string status_field(pid_t tid, const char* name);
// The entries of `dir` named by a number (processes in /proc, threads, descriptors), in
// order; empty if it cannot be read.
std::vector<int> numbered_entries(const std::string& dir);
// The threads of process `pid` (/proc/PID/task); empty if it is gone.
std::vector<pid_t> list_tasks(pid_t pid);
// The first of process `pid`'s open files (/proc/PID/fd/N), else of its mapped files
// (/proc/PID/map_files/A-B: one it closed but still maps), whose entry's path `match`es,
// opened read-write; -1 if none is.
int open_process_file(pid_t pid, const std::function<bool(const std::string& entry)>& match);

} // namespace tpagent
