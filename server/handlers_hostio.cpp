// Host I/O (vFile:*): lets gdb read the target's files, so the default `target:` sysroot works.
// Flags, modes, errno values and struct stat are the File-I/O protocol's, not the host's.
#include "server/host_io.hpp"
#include "server/packet_handlers.hpp"
#include "server/session.hpp"
#include "protocol/framing.hpp"
#include "protocol/hex.hpp"
#include "protocol/requests.hpp"
#include "server/server.hpp"
#include "base/openat2.hpp"
#include <cerrno>
#include <fcntl.h>
#include <filesystem>
#include <fmt/format.h>
#include <sys/stat.h>
#include <unistd.h>
#include <vector>

namespace tpagent::server {

using namespace protocol;

void HostIoState::close_all() {
    for (int fd : fds)
        ::close(fd);
    fds.clear();
}

namespace {

int protocol_errno(int e) {
    switch (e) {
    case EPERM:
        return 1;
    case ENOENT:
        return 2;
    case EINTR:
        return 4;
    case EBADF:
        return 9;
    case EACCES:
        return 13;
    case EFAULT:
        return 14;
    case EBUSY:
        return 16;
    case EEXIST:
        return 17;
    case ENODEV:
        return 19;
    case ENOTDIR:
        return 20;
    case EISDIR:
        return 21;
    case EINVAL:
        return 22;
    case ENFILE:
        return 23;
    case EMFILE:
        return 24;
    case EFBIG:
        return 27;
    case ENOSPC:
        return 28;
    case ESPIPE:
        return 29;
    case EROFS:
        return 30;
    case ENAMETOOLONG:
        return 91;
    default:
        return 9999;
    }
}

std::string fail(int e) {
    return fmt::format("F-1,{:x}", protocol_errno(e));
}

int host_open_flags(std::uint64_t f) {
    int flags = 0;
    switch (f & 3) {
    case 0:
        flags = O_RDONLY;
        break;
    case 1:
        flags = O_WRONLY;
        break;
    case 2:
        flags = O_RDWR;
        break;
    default:
        return -1;
    }
    if (f & 0x8) flags |= O_APPEND;
    if (f & 0x200) flags |= O_CREAT;
    if (f & 0x400) flags |= O_TRUNC;
    if (f & 0x800) flags |= O_EXCL;
    return flags | O_CLOEXEC;
}

// Names are resolved in the filesystem of the process chosen with setfs.
std::string resolve(const HostIoState& st, const std::string& name) {
    if (st.fs_pid == 0 || name.empty() || name.front() != '/') return name;
    return fmt::format("/proc/{}/root{}", st.fs_pid, name);
}

// With --hostio-dir DIR, names resolve inside DIR (in the setfs process's view) as if it were
// the root: absolute names, `..` and symbolic links alike stay in it (openat2
// RESOLVE_IN_ROOT). Each call returns what the system call would, -1 with errno set.
class ConfinedRoot {
  public:
    ConfinedRoot(const HostIoState& st, const std::string& dir) {
        const std::string base = st.fs_pid ? fmt::format("/proc/{}/root/{}", st.fs_pid, dir) : dir;
        fd_ = ::open(base.c_str(), O_PATH | O_DIRECTORY | O_CLOEXEC);
    }
    ConfinedRoot(const ConfinedRoot&) = delete;
    ConfinedRoot& operator=(const ConfinedRoot&) = delete;
    ~ConfinedRoot() {
        if (fd_ >= 0) ::close(fd_);
    }
    int open(const std::string& name, int flags, mode_t mode) const {
        return at(relative(name), flags, mode);
    }
    // The folder holding `name`, open, and its last component: for unlink and readlink.
    int parent(const std::string& name, std::string& last) const {
        const std::filesystem::path p(relative(name));
        last = p.filename().string();
        if (last.empty() || last == "." || last == "..") {
            errno = EINVAL;
            return -1;
        }
        const std::string dir = p.parent_path().string();
        return at(dir.empty() ? "." : dir, O_PATH | O_DIRECTORY | O_CLOEXEC, 0);
    }

  private:
    static std::string relative(const std::string& name) {
        const auto first = name.find_first_not_of('/');
        return first == std::string::npos ? "." : name.substr(first);
    }
    int at(const std::string& rel, int flags, mode_t mode) const {
        if (fd_ < 0) return -1; // errno from the constructor's open
        return openat2_fd(fd_, rel.c_str(), flags, mode, RESOLVE_IN_ROOT | RESOLVE_NO_MAGICLINKS);
    }
    int fd_ = -1;
};

const std::optional<std::string>& hostio_dir(Session& s) {
    return s.server().options().hostio_dir;
}

// A file descriptor gdb opened here.
Result<int> opened_fd(const HostIoState& st, std::uint64_t fd) {
    if (!st.fds.count(static_cast<int>(fd)))
        return make_error(ErrorCode::BadPacket, "not a file we opened");
    return static_cast<int>(fd);
}

Result<int> parse_fd(const HostIoState& st, std::string_view text) {
    auto fd = parse_hex_u64(text);
    if (!fd) return make_error(ErrorCode::BadPacket, "not a file we opened");
    return opened_fd(st, *fd);
}

void put_be(std::string& out, std::uint64_t v, int bytes) {
    for (int i = bytes - 1; i >= 0; --i)
        out.push_back(static_cast<char>(v >> (8 * i)));
}

} // namespace

std::string hostio_bad_arguments(const Error&) {
    return fail(EINVAL);
}

std::string hostio_bad_fd(const Error&) {
    return fail(EBADF);
}

std::string handle_vfile_setfs(Session& s, const PacketArgs& args) {
    const std::uint64_t pid = args.number(0);
    if (pid > 0x7fffffff) return fail(EINVAL);
    s.host_io().fs_pid = static_cast<pid_t>(pid);
    return "F0";
}

// vFile:open:NAME,FLAGS,MODE
std::string handle_vfile_open(Session& s, const PacketArgs& args) {
    const std::string& name = args.text(0);
    int host_flags = host_open_flags(args.number(1));
    if (host_flags < 0) return fail(EINVAL);
    if (s.host_io().fds.size() >= HostIoState::kMaxOpenFiles) return fail(EMFILE);
    const auto m = static_cast<mode_t>(args.number(2) & 0777);
    const auto& dir = hostio_dir(s);
    int fd = dir ? ConfinedRoot(s.host_io(), *dir).open(name, host_flags, m)
                 : ::open(resolve(s.host_io(), name).c_str(), host_flags, m);
    if (fd < 0) return fail(errno);
    s.host_io().fds.insert(fd);
    return fmt::format("F{:x}", fd);
}

std::string handle_vfile_close(Session& s, const PacketArgs& args) {
    auto fd = opened_fd(s.host_io(), args.number(0));
    if (!fd) return fail(EBADF);
    s.host_io().fds.erase(*fd);
    return ::close(*fd) == 0 ? "F0" : fail(errno);
}

std::string handle_vfile_pread(Session& s, std::string_view args) {
    auto parts = split(args, ',');
    if (parts.size() != 3) return fail(EINVAL);
    auto fd = parse_fd(s.host_io(), parts[0]);
    auto count = parse_hex_u64(parts[1]);
    auto offset = parse_hex_u64(parts[2]);
    if (!fd) return fail(EBADF);
    if (!count || !offset) return fail(EINVAL);
    // Escaping can double the data: keep the reply within one packet.
    std::vector<std::uint8_t> buf(std::min<std::uint64_t>(*count, kPacketSize / 2 - 32));
    ssize_t n = ::pread(*fd, buf.data(), buf.size(), static_cast<off_t>(*offset));
    if (n < 0) return fail(errno);
    return fmt::format("F{:x};", n) +
           escape_binary(std::span(buf.data(), static_cast<std::size_t>(n)));
}

std::string handle_vfile_pwrite(Session& s, std::string_view args) {
    std::size_t c1 = args.find(',');
    std::size_t c2 = c1 == std::string_view::npos ? c1 : args.find(',', c1 + 1);
    if (c2 == std::string_view::npos) return fail(EINVAL);
    auto fd = parse_fd(s.host_io(), args.substr(0, c1));
    auto offset = parse_hex_u64(args.substr(c1 + 1, c2 - c1 - 1));
    if (!fd) return fail(EBADF);
    if (!offset) return fail(EINVAL);
    std::string_view data = args.substr(c2 + 1);
    ssize_t n = ::pwrite(*fd, data.data(), data.size(), static_cast<off_t>(*offset));
    if (n < 0) return fail(errno);
    return fmt::format("F{:x}", n);
}

std::string handle_vfile_fstat(Session& s, const PacketArgs& args) {
    auto fd = opened_fd(s.host_io(), args.number(0));
    if (!fd) return fail(EBADF);
    struct stat st {};
    if (::fstat(*fd, &st) != 0) return fail(errno);
    std::string out;
    put_be(out, st.st_dev, 4);
    put_be(out, st.st_ino, 4);
    put_be(out, st.st_mode, 4);
    put_be(out, st.st_nlink, 4);
    put_be(out, st.st_uid, 4);
    put_be(out, st.st_gid, 4);
    put_be(out, st.st_rdev, 4);
    put_be(out, static_cast<std::uint64_t>(st.st_size), 8);
    put_be(out, static_cast<std::uint64_t>(st.st_blksize), 8);
    put_be(out, static_cast<std::uint64_t>(st.st_blocks), 8);
    put_be(out, static_cast<std::uint64_t>(st.st_atime), 4);
    put_be(out, static_cast<std::uint64_t>(st.st_mtime), 4);
    put_be(out, static_cast<std::uint64_t>(st.st_ctime), 4);
    return fmt::format("F{:x};", out.size()) + escape_binary(out);
}

std::string handle_vfile_unlink(Session& s, const PacketArgs& args) {
    const std::string& name = args.text(0);
    if (const auto& dir = hostio_dir(s)) {
        std::string last;
        ConfinedRoot root(s.host_io(), *dir);
        const int parent = root.parent(name, last);
        if (parent < 0) return fail(errno);
        const int r = ::unlinkat(parent, last.c_str(), 0);
        const int error = errno;
        ::close(parent);
        return r == 0 ? "F0" : fail(error);
    }
    return ::unlink(resolve(s.host_io(), name).c_str()) == 0 ? "F0" : fail(errno);
}

std::string handle_vfile_readlink(Session& s, const PacketArgs& args) {
    const std::string& name = args.text(0);
    char buf[4096];
    ssize_t n = -1;
    if (const auto& dir = hostio_dir(s)) {
        std::string last;
        ConfinedRoot root(s.host_io(), *dir);
        const int parent = root.parent(name, last);
        if (parent < 0) return fail(errno);
        n = ::readlinkat(parent, last.c_str(), buf, sizeof buf);
        const int error = errno;
        ::close(parent);
        errno = error;
    } else {
        n = ::readlink(resolve(s.host_io(), name).c_str(), buf, sizeof buf);
    }
    if (n < 0) return fail(errno);
    return fmt::format("F{:x};", n) +
           escape_binary(std::string_view(buf, static_cast<std::size_t>(n)));
}

} // namespace tpagent::server
