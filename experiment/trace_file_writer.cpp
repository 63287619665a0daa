#include "experiment/trace_file_writer.hpp"
#include "experiment/trace_experiment.hpp"
#include "base/openat2.hpp"
#include "base/system_error.hpp"
#include "trace/frame_format.hpp"
#include <cerrno>
#include <cstdio>
#include <fcntl.h>
#include <random>
#include <cstring>
#include <filesystem>
#include <functional>
#include <fmt/format.h>
#include <sys/stat.h>
#include <unistd.h>
#include <vector>

namespace tpagent::experiment {

namespace fs = std::filesystem;

namespace {
bool has_parent_step(const fs::path& p) {
    for (const auto& part : p)
        if (part == "..") return true;
    return false;
}

} // namespace

std::string trace_file_text_section(TraceExperiment& experiment, std::string_view tdesc_xml,
                                    std::optional<std::string_view> status_payload) {
    std::string out = "\x7fTRACE0\n";
    out += fmt::format("R {:x}\n", experiment.buffer().register_block_size());
    std::string_view xml = tdesc_xml;
    while (!xml.empty()) {
        std::size_t nl = xml.find('\n');
        out += "tdesc ";
        out += xml.substr(0, nl);
        out += '\n';
        xml = nl == std::string_view::npos ? std::string_view{} : xml.substr(nl + 1);
    }
    out += "status ";
    if (status_payload)
        out += *status_payload;
    else
        out += experiment.status_reply().substr(1); // the qTStatus payload without its T
    out += '\n';
    auto variables = experiment.variables().upload();
    for (std::string piece = variables.next(); piece != "l"; piece = variables.next())
        out += "tsv " + piece + "\n";
    auto tracepoints = experiment.table().upload();
    for (std::string piece = tracepoints.next(); piece != "l"; piece = tracepoints.next())
        out += "tp " + piece + "\n";
    out += '\n';
    return out;
}

Result<std::string> resolve_save_path(std::string_view name,
                                      const std::optional<std::string>& save_dir) {
    if (name.empty()) return make_error(ErrorCode::BadPacket, "empty file name");
    if (name.find('\0') != std::string_view::npos)
        return make_error(ErrorCode::BadPacket, "NUL in file name");
    fs::path path(name);
    if (!save_dir) return path.string();
    if (has_parent_step(path))
        return make_error(ErrorCode::NotAllowed, "'..' is not allowed in trace file names");
    fs::path dir = fs::path(*save_dir).lexically_normal();
    if (path.is_relative()) return (dir / path).lexically_normal().string();
    fs::path rel = path.lexically_normal().lexically_relative(dir);
    if (rel.empty() || rel == "." || has_parent_step(rel))
        return make_error(ErrorCode::NotAllowed, fmt::format("trace files go in {}", dir.string()));
    return path.lexically_normal().string();
}

namespace {

// The folder a trace file goes in, open, and the file's name in it. Inside a save directory
// the folder is resolved beneath it (openat2 RESOLVE_BENEATH): a symbolic link there that
// leads out of it is refused, not followed.
struct Destination {
    int dir = -1;
    std::string name;
    Destination() = default;
    Destination(const Destination&) = delete;
    Destination& operator=(const Destination&) = delete;
    ~Destination() {
        if (dir >= 0) close(dir);
    }
};

Status open_destination(const std::string& path, const std::optional<std::string>& confine_to,
                        Destination& d) {
    const fs::path file(path);
    d.name = file.filename().string();
    if (!confine_to) {
        const std::string dir = file.parent_path().string();
        d.dir = open(dir.empty() ? "." : dir.c_str(), O_PATH | O_DIRECTORY | O_CLOEXEC);
        return d.dir < 0 ? Status(file_system_error("cannot create", path)) : ok_status();
    }
    const int top = open(confine_to->c_str(), O_PATH | O_DIRECTORY | O_CLOEXEC);
    if (top < 0) return file_system_error("cannot create", path);
    const fs::path rel =
        file.parent_path().lexically_relative(fs::path(*confine_to).lexically_normal());
    const std::string sub = rel.empty() ? "." : rel.string();
    d.dir = openat2_fd(top, sub.c_str(), O_PATH | O_DIRECTORY | O_CLOEXEC, 0,
                       RESOLVE_BENEATH | RESOLVE_NO_MAGICLINKS);
    const int error = errno;
    close(top);
    if (d.dir >= 0) return ok_status();
    if (error == EXDEV)
        return make_error(
            ErrorCode::NotAllowed,
            fmt::format("cannot create {}: a symbolic link leads out of {}", path, *confine_to));
    errno = error;
    return file_system_error("cannot create", path);
}

// A new file `name`.XXXXXX in the folder, never through a link.
int create_temporary(int dir, const std::string& name, std::string& tmp) {
    std::random_device random;
    static constexpr char kChars[] =
        "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789";
    for (int attempt = 0; attempt < 100; ++attempt) {
        tmp = name + ".";
        for (int i = 0; i < 6; ++i)
            tmp += kChars[random() % (sizeof kChars - 1)];
        const int fd =
            openat(dir, tmp.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC,
                   0666); // less the umask: a saved trace is an ordinary file
        if (fd >= 0 || errno != EEXIST) return fd;
    }
    return -1;
}

} // namespace

namespace {
// The file made by `body` (which writes it whole, or says why not) in a temporary file beside
// `path`, synced, then renamed into place.
Status write_file_in_place(const std::string& path, const std::optional<std::string>& confine_to,
                           const std::function<bool(FILE*)>& body) {
    Destination d;
    if (auto s = open_destination(path, confine_to, d); !s) return s;
    std::string tmp;
    const int fd = create_temporary(d.dir, d.name, tmp);
    // Errors name the file asked for: the temporary one is ours.
    if (fd < 0) return file_system_error("cannot create", path);
    FILE* f = fdopen(fd, "wb");
    if (!f) {
        close(fd);
        unlinkat(d.dir, tmp.c_str(), 0);
        return file_system_error("cannot open", path);
    }
    auto fail = [&](const char* what) {
        Error e = file_system_error(what, path);
        std::fclose(f);
        unlinkat(d.dir, tmp.c_str(), 0);
        return e;
    };
    if (!body(f) || std::fwrite(trace::kEndOfFrames, 1, sizeof trace::kEndOfFrames, f) !=
                        sizeof trace::kEndOfFrames)
        return fail("cannot write");
    if (std::fflush(f) != 0 || fsync(fileno(f)) != 0) return fail("cannot write");
    if (std::fclose(f) != 0) {
        unlinkat(d.dir, tmp.c_str(), 0);
        return file_system_error("cannot write", path);
    }
    // A link already under the name is replaced, never followed.
    if (renameat(d.dir, tmp.c_str(), d.dir, d.name.c_str()) != 0) {
        Error e = file_system_error("cannot rename into", path);
        unlinkat(d.dir, tmp.c_str(), 0);
        return e;
    }
    return ok_status();
}

bool write_all(FILE* f, const void* bytes, std::size_t size) {
    return std::fwrite(bytes, 1, size, f) == size;
}
} // namespace

Status write_trace_file(const std::string& path, TraceExperiment& experiment,
                        std::string_view tdesc_xml, const std::optional<std::string>& confine_to) {
    return write_file_in_place(path, confine_to, [&](FILE* f) {
        const std::string text = trace_file_text_section(experiment, tdesc_xml);
        if (!write_all(f, text.data(), text.size())) return false;
        // The frames are already in the file's frame format: copy the buffer as it is.
        const auto& buffer = experiment.buffer();
        std::vector<std::uint8_t> chunk(1 << 20);
        for (std::uint64_t offset = 0; offset < buffer.raw_size();) {
            const std::size_t got = buffer.read_raw(offset, chunk);
            if (got == 0) break;
            if (!write_all(f, chunk.data(), got)) return false;
            offset += got;
        }
        return true;
    });
}

Status write_trace_file(const std::string& path, std::string_view text,
                        std::span<const std::uint8_t> frames,
                        const std::optional<std::string>& confine_to) {
    return write_file_in_place(path, confine_to, [&](FILE* f) {
        return write_all(f, text.data(), text.size()) && write_all(f, frames.data(), frames.size());
    });
}

} // namespace tpagent::experiment
