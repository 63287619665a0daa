#include "tracing/trace_file_writer.hpp"
#include "tracing/trace_experiment.hpp"
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fmt/format.h>
#include <sys/stat.h>
#include <unistd.h>
#include <vector>

namespace tpagent::agent {

namespace fs = std::filesystem;

namespace {
Error io_error(const std::string& what, const std::string& path) {
    return make_error(ErrorCode::SystemError,
                      fmt::format("{} {}: {}", what, path, std::strerror(errno)));
}

bool has_parent_step(const fs::path& p) {
    for (const auto& part : p)
        if (part == "..") return true;
    return false;
}

std::string text_section(TraceExperiment& experiment, std::string_view tdesc_xml) {
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
    std::string status = experiment.status_reply();
    out += "status " + status.substr(1) + "\n"; // the qTStatus payload without its leading T
    auto variables = experiment.variables().upload();
    for (std::string piece = variables.next(); piece != "l"; piece = variables.next())
        out += "tsv " + piece + "\n";
    auto tracepoints = experiment.table().upload();
    for (std::string piece = tracepoints.next(); piece != "l"; piece = tracepoints.next())
        out += "tp " + piece + "\n";
    out += '\n';
    return out;
}
} // namespace

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

Status write_trace_file(const std::string& path, TraceExperiment& experiment,
                        std::string_view tdesc_xml) {
    std::string tmp = path + ".XXXXXX";
    int fd = mkstemp(tmp.data());
    // Errors name the file asked for: the temporary one is ours.
    if (fd < 0) return io_error("cannot create", path);
    mode_t mask = umask(0); // mkstemp makes 0600; a saved trace is an ordinary file
    umask(mask);
    fchmod(fd, 0666 & ~mask);
    FILE* f = fdopen(fd, "wb");
    if (!f) {
        close(fd);
        unlink(tmp.c_str());
        return io_error("cannot open", path);
    }
    auto fail = [&](const char* what) {
        Error e = io_error(what, path);
        std::fclose(f);
        unlink(tmp.c_str());
        return e;
    };
    std::string text = text_section(experiment, tdesc_xml);
    if (std::fwrite(text.data(), 1, text.size(), f) != text.size()) return fail("cannot write");
    // The frames are already in the file's frame format: copy the buffer as it is.
    const auto& buffer = experiment.buffer();
    std::vector<std::uint8_t> chunk(1 << 20);
    for (std::uint64_t offset = 0; offset < buffer.raw_size();) {
        std::size_t got = buffer.read_raw(offset, chunk);
        if (got == 0) break;
        if (std::fwrite(chunk.data(), 1, got, f) != got) return fail("cannot write");
        offset += got;
    }
    const std::uint8_t end[4] = {0, 0, 0, 0}; // tracepoint number 0 ends the frames
    if (std::fwrite(end, 1, sizeof end, f) != sizeof end) return fail("cannot write");
    if (std::fflush(f) != 0 || fsync(fileno(f)) != 0) return fail("cannot write");
    if (std::fclose(f) != 0) {
        unlink(tmp.c_str());
        return io_error("cannot write", path);
    }
    if (std::rename(tmp.c_str(), path.c_str()) != 0) {
        Error e = io_error("cannot rename into", path);
        unlink(tmp.c_str());
        return e;
    }
    return ok_status();
}

} // namespace tpagent::agent
