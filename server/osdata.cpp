#include "server/osdata.hpp"

#include "base/proc_files.hpp"
#include "protocol/hex.hpp"
#include "protocol/xml.hpp"
#include <algorithm>
#include <arpa/inet.h>
#include <charconv>
#include <ctime>
#include <fmt/format.h>
#include <map>
#include <set>
#include <span>
#include <sys/stat.h>
#include <utility>
#include <vector>

namespace tpagent::server {

namespace {

using Item = std::vector<std::pair<std::string, std::string>>; // column name, value

struct Table {
    std::string_view title; // <osdata type="...">, gdbserver's
    std::vector<Item> items;
};

std::string to_xml(const Table& table) {
    std::string xml = fmt::format("<osdata type=\"{}\">\n", table.title);
    for (const Item& item : table.items) {
        xml += "<item>";
        for (const auto& [name, value] : item)
            xml +=
                fmt::format("<column name=\"{}\">{}</column>", name, protocol::xml_escape(value));
        xml += "</item>";
    }
    return xml + "</osdata>\n";
}

std::vector<std::string_view> words(std::string_view line) {
    std::vector<std::string_view> out;
    for (std::string_view w : protocol::split(line, ' '))
        if (!w.empty()) out.push_back(w);
    return out;
}

std::vector<std::string_view> lines(std::string_view text) {
    std::vector<std::string_view> out = protocol::split(text, '\n');
    if (!out.empty() && out.back().empty()) out.pop_back();
    return out;
}

template <typename T> T number(std::string_view text, int base = 10) {
    T value{};
    std::from_chars(text.data(), text.data() + text.size(), value, base);
    return value;
}

std::vector<pid_t> processes() {
    return numbered_entries("/proc");
}

std::string command_name(pid_t pid) {
    return std::string(protocol::trim(read_file(fmt::format("/proc/{}/comm", pid))));
}

// The fields of /proc/PID[/task/TID]/stat after the command name: [0] is the state (field 3).
std::vector<std::string> stat_fields(const std::string& path) {
    std::string stat = read_file(path);
    std::size_t close = stat.rfind(')');
    std::vector<std::string> out;
    if (close == std::string::npos) return out;
    for (std::string_view w : words(std::string_view(stat).substr(close + 1)))
        out.emplace_back(protocol::trim(w));
    return out;
}
constexpr std::size_t kPgrpField = 5 - 3;
constexpr std::size_t kProcessorField = 39 - 3;

// Names from /etc/passwd and /etc/group (no NSS: tpagent is a static binary on boards).
class Names {
  public:
    explicit Names(const char* file) {
        const std::string text = read_file(file);
        for (std::string_view line : lines(text)) {
            auto f = protocol::split(line, ':');
            if (f.size() >= 3) names_.emplace(number<unsigned>(f[2]), std::string(f[0]));
        }
    }
    std::string operator()(std::string_view id) const {
        auto it = names_.find(number<unsigned>(id));
        return it == names_.end() ? std::string(id) : it->second;
    }

  private:
    std::map<unsigned, std::string> names_;
};

std::string owner(pid_t pid, const Names& users) {
    struct stat st {};
    if (stat(fmt::format("/proc/{}", pid).c_str(), &st) != 0) return {};
    return users(std::to_string(st.st_uid));
}

// A process's command line, or [its name] when it has none (a kernel thread).
std::string command_line(pid_t pid) {
    std::string cmdline = read_file(fmt::format("/proc/{}/cmdline", pid));
    std::replace(cmdline.begin(), cmdline.end(), '\0', ' ');
    std::string line(protocol::trim(cmdline));
    return line.empty() ? fmt::format("[{}]", command_name(pid)) : line;
}

// A pid's command, or the pid itself when the process is gone (as gdbserver shows it).
std::string command_or_pid(std::string_view pid) {
    std::string name = command_name(number<pid_t>(pid));
    return name.empty() ? std::string(pid) : name;
}

// A System V IPC time: ctime's words without its newline, nothing for 0.
std::string ipc_time(std::string_view seconds) {
    const auto t = number<std::time_t>(seconds);
    if (t == 0) return {};
    char text[32];
    return ctime_r(&t, text) ? std::string(protocol::trim(text)) : std::string(seconds);
}

Table process_table() {
    Names users("/etc/passwd");
    Table t{"processes", {}};
    for (pid_t pid : processes()) {
        std::set<int> cores;
        for (pid_t tid : list_tasks(pid)) {
            auto f = stat_fields(fmt::format("/proc/{}/task/{}/stat", pid, tid));
            if (f.size() > kProcessorField) cores.insert(number<int>(f[kProcessorField]));
        }
        t.items.push_back({{"pid", std::to_string(pid)},
                           {"user", owner(pid, users)},
                           {"command", command_line(pid)},
                           {"cores", fmt::format("{}", fmt::join(cores, ","))}});
    }
    return t;
}

Table process_group_table() {
    std::vector<std::pair<pid_t, pid_t>> members; // pgid, pid
    for (pid_t pid : processes()) {
        auto f = stat_fields(fmt::format("/proc/{}/stat", pid));
        // Kernel threads (group 0) are left out, as gdbserver leaves them.
        if (f.size() > kPgrpField && number<pid_t>(f[kPgrpField]) > 0)
            members.emplace_back(number<pid_t>(f[kPgrpField]), pid);
    }
    std::sort(members.begin(), members.end());
    Table t{"process groups", {}};
    for (auto [pgid, pid] : members)
        t.items.push_back({{"pgid", std::to_string(pgid)},
                           {"leader command", command_or_pid(std::to_string(pgid))},
                           {"pid", std::to_string(pid)},
                           {"command line", command_line(pid)}});
    return t;
}

Table thread_table() {
    Table t{"threads", {}};
    for (pid_t pid : processes()) {
        const std::string command = command_name(pid);
        for (pid_t tid : list_tasks(pid)) {
            auto f = stat_fields(fmt::format("/proc/{}/task/{}/stat", pid, tid));
            t.items.push_back({{"pid", std::to_string(pid)},
                               {"command", command},
                               {"tid", std::to_string(tid)},
                               {"core", f.size() > kProcessorField ? f[kProcessorField] : ""}});
        }
    }
    return t;
}

Table file_table() {
    Table t{"files", {}};
    for (pid_t pid : processes()) {
        const std::string command = command_name(pid);
        const std::vector<int> fds = numbered_entries(fmt::format("/proc/{}/fd", pid));
        for (int fd : fds) {
            // The descriptor's number stands for a name that cannot be read, as in gdbserver.
            std::string name = read_link(fmt::format("/proc/{}/fd/{}", pid, fd));
            t.items.push_back({{"pid", std::to_string(pid)},
                               {"command", command},
                               {"file descriptor", std::to_string(fd)},
                               {"name", name.empty() ? std::to_string(fd) : name}});
        }
    }
    return t;
}

// "0100007F:0050" (IPv4) or 32 hex digits (IPv6, four host-order words) and a hex port.
std::pair<std::string, std::string> socket_address(std::string_view text, bool v6) {
    auto colon = text.find(':');
    if (colon == std::string_view::npos) return {};
    std::string_view hex = text.substr(0, colon);
    std::uint32_t words[4] = {};
    const std::size_t count = v6 ? 4 : 1;
    if (hex.size() != count * 8) return {};
    for (std::size_t i = 0; i < count; ++i)
        words[i] = number<std::uint32_t>(hex.substr(i * 8, 8), 16);
    char out[INET6_ADDRSTRLEN] = {};
    inet_ntop(v6 ? AF_INET6 : AF_INET, words, out, sizeof out);
    return {out, std::to_string(number<unsigned>(text.substr(colon + 1), 16))};
}

Table socket_table() {
    constexpr const char* kStates[] = {"",           "ESTABLISHED", "SYN_SENT",  "SYN_RECV",
                                       "FIN_WAIT1",  "FIN_WAIT2",   "TIME_WAIT", "CLOSE",
                                       "CLOSE_WAIT", "LAST_ACK",    "LISTEN",    "CLOSING"};
    Names users("/etc/passwd");
    Table t{"I sockets", {}};
    for (auto [file, v6, stream] :
         {std::tuple{"/proc/net/tcp", false, true}, std::tuple{"/proc/net/udp", false, false},
          std::tuple{"/proc/net/tcp6", true, true}, std::tuple{"/proc/net/udp6", true, false}}) {
        const std::string text = read_file(file);
        auto all = lines(text);
        for (std::size_t i = 1; i < all.size(); ++i) { // after the header
            auto f = words(all[i]);
            if (f.size() < 8) continue;
            auto [local, local_port] = socket_address(f[1], v6);
            auto [remote, remote_port] = socket_address(f[2], v6);
            const auto state = number<unsigned>(f[3], 16);
            t.items.push_back({{"local address", local},
                               {"local port", local_port},
                               {"remote address", remote},
                               {"remote port", remote_port},
                               {"state", state < std::size(kStates) ? kStates[state] : ""},
                               {"user", users(f[7])},
                               {"family", v6 ? "INET6" : "INET"},
                               {"protocol", stream ? "STREAM" : "DGRAM"}});
        }
    }
    return t;
}

// /proc/sysvipc/FILE: each row's fields by the header's names.
std::vector<std::map<std::string_view, std::string_view>> ipc_rows(const std::string& text) {
    std::vector<std::map<std::string_view, std::string_view>> rows;
    auto all = lines(text);
    if (all.empty()) return rows;
    auto header = words(all[0]);
    for (std::size_t i = 1; i < all.size(); ++i) {
        auto f = words(all[i]);
        auto& row = rows.emplace_back();
        for (std::size_t c = 0; c < f.size() && c < header.size(); ++c)
            row[header[c]] = f[c];
    }
    return rows;
}

// A System V IPC table: gdbserver's columns, each from a field of /proc/sysvipc/FILE.
enum class Cell { Raw, Command, User, Group, Time };
struct IpcColumn {
    std::string_view name, field;
    Cell cell;
};

Table ipc_table(const char* file, std::string_view title, std::span<const IpcColumn> columns) {
    Names users("/etc/passwd"), groups("/etc/group");
    const std::string text = read_file(file);
    Table t{title, {}};
    for (auto& r : ipc_rows(text)) {
        Item item;
        for (const IpcColumn& c : columns) {
            std::string_view v = r[c.field];
            item.emplace_back(c.name, c.cell == Cell::Command ? command_or_pid(v)
                                      : c.cell == Cell::User  ? users(v)
                                      : c.cell == Cell::Group ? groups(v)
                                      : c.cell == Cell::Time  ? ipc_time(v)
                                                              : std::string(v));
        }
        t.items.push_back(std::move(item));
    }
    return t;
}

constexpr IpcColumn kOwners[] = {{"user", "uid", Cell::User},
                                 {"group", "gid", Cell::Group},
                                 {"creator user", "cuid", Cell::User},
                                 {"creator group", "cgid", Cell::Group}};

// kOwners' four columns go at `at`.
template <std::size_t N>
std::vector<IpcColumn> with_owners(const IpcColumn (&columns)[N], std::size_t at) {
    std::vector<IpcColumn> all(columns, columns + at);
    all.insert(all.end(), std::begin(kOwners), std::end(kOwners));
    all.insert(all.end(), columns + at, columns + N);
    return all;
}

Table shm_table() {
    constexpr IpcColumn kColumns[] = {{"key", "key", Cell::Raw},
                                      {"shmid", "shmid", Cell::Raw},
                                      {"permissions", "perms", Cell::Raw},
                                      {"size", "size", Cell::Raw},
                                      {"creator command", "cpid", Cell::Command},
                                      {"last op. command", "lpid", Cell::Command},
                                      {"num attached", "nattch", Cell::Raw},
                                      {"last shmat() time", "atime", Cell::Time},
                                      {"last shmdt() time", "dtime", Cell::Time},
                                      {"last shmctl() time", "ctime", Cell::Time}};
    return ipc_table("/proc/sysvipc/shm", "shared memory", with_owners(kColumns, 7));
}

Table semaphore_table() {
    constexpr IpcColumn kColumns[] = {{"key", "key", Cell::Raw},
                                      {"semid", "semid", Cell::Raw},
                                      {"permissions", "perms", Cell::Raw},
                                      {"num semaphores", "nsems", Cell::Raw},
                                      {"last semop() time", "otime", Cell::Time},
                                      {"last semctl() time", "ctime", Cell::Time}};
    return ipc_table("/proc/sysvipc/sem", "semaphores", with_owners(kColumns, 4));
}

Table message_queue_table() {
    constexpr IpcColumn kColumns[] = {{"key", "key", Cell::Raw},
                                      {"msqid", "msqid", Cell::Raw},
                                      {"permissions", "perms", Cell::Raw},
                                      {"num used bytes", "cbytes", Cell::Raw},
                                      {"num messages", "qnum", Cell::Raw},
                                      {"last msgsnd() command", "lspid", Cell::Command},
                                      {"last msgrcv() command", "lrpid", Cell::Command},
                                      {"last msgsnd() time", "stime", Cell::Time},
                                      {"last msgrcv() time", "rtime", Cell::Time},
                                      {"last msgctl() time", "ctime", Cell::Time}};
    return ipc_table("/proc/sysvipc/msg", "message queues", with_owners(kColumns, 7));
}

Table module_table() {
    Table t{"modules", {}};
    const std::string text = read_file("/proc/modules");
    for (std::string_view line : lines(text)) {
        auto f = words(line);
        if (f.size() < 6) continue;
        t.items.push_back({{"name", std::string(f[0])},
                           {"size", std::string(f[1])},
                           {"num uses", std::string(f[2])},
                           {"dependencies", std::string(f[3])},
                           {"status", std::string(f[4])},
                           {"address", std::string(f[5])}});
    }
    return t;
}

Table cpu_table() {
    Table t{"cpus", {}};
    Item cpu;
    const std::string text = read_file("/proc/cpuinfo");
    for (std::string_view line : protocol::split(text, '\n')) {
        auto colon = line.find(':');
        if (colon == std::string_view::npos) {
            if (!cpu.empty()) t.items.push_back(std::move(cpu));
            cpu.clear();
            continue;
        }
        cpu.emplace_back(protocol::trim(line.substr(0, colon)),
                         protocol::trim(line.substr(colon + 1)));
    }
    if (!cpu.empty()) t.items.push_back(std::move(cpu));
    return t;
}

struct OsdataType {
    std::string_view name, description, title;
    Table (*make)();
};

constexpr OsdataType kTypes[] = {
    {"cpus", "Listing of all cpus/cores on the system", "CPUs", cpu_table},
    {"files", "Listing of all file descriptors", "File descriptors", file_table},
    {"modules", "Listing of all loaded kernel modules", "Kernel modules", module_table},
    {"msg", "Listing of all message queues", "Message queues", message_queue_table},
    {"processes", "Listing of all processes", "Processes", process_table},
    {"procgroups", "Listing of all process groups", "Process groups", process_group_table},
    {"semaphores", "Listing of all semaphores", "Semaphores", semaphore_table},
    {"shm", "Listing of all shared-memory regions", "Shared-memory regions", shm_table},
    {"sockets", "Listing of all internet-domain sockets", "Sockets", socket_table},
    {"threads", "Listing of all threads", "Threads", thread_table},
};

} // namespace

Result<std::string> osdata_xml(std::string_view type) {
    if (type.empty()) {
        Table t{"types", {}};
        for (const OsdataType& k : kTypes)
            t.items.push_back({{"Type", std::string(k.name)},
                               {"Description", std::string(k.description)},
                               {"Title", std::string(k.title)}});
        return to_xml(t);
    }
    for (const OsdataType& k : kTypes)
        if (k.name == type) return to_xml(k.make());
    // An empty document, as gdbserver's: gdb then says "Empty data returned by target.  Wrong
    // osdata type?", where an error reply would only give "Can not fetch data now."
    return std::string{};
}

} // namespace tpagent::server
