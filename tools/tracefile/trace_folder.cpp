// See trace_folder.hpp.
#include "tools/tracefile/trace_folder.hpp"

#include "trace/frame_format.hpp"
#include <algorithm>
#include <charconv>
#include <filesystem>
#include <fmt/format.h>
#include <system_error>

namespace tpagent::tracefile {

namespace fs = std::filesystem;

std::optional<std::uint64_t> recorded_file_number(std::string_view path) {
    const std::string_view name = path.substr(path.rfind('/') + 1); // npos + 1: all of it
    if (!name.starts_with(kRecordedPrefix) || !name.ends_with(".tf")) return std::nullopt;
    const std::string_view digits(name.data() + kRecordedPrefix.size(),
                                  name.size() - kRecordedPrefix.size() - 3);
    std::uint64_t n = 0;
    const auto [at, bad] = std::from_chars(digits.data(), digits.data() + digits.size(), n);
    if (bad != std::errc() || at != digits.data() + digits.size() || digits.empty())
        return std::nullopt;
    return n;
}

std::string recorded_file_path(const std::string& dir, std::uint64_t number) {
    return fmt::format("{}/{}{:06}.tf", dir, kRecordedPrefix, number);
}

Result<std::vector<std::string>> recorded_files(const std::string& dir) {
    std::vector<std::pair<std::uint64_t, std::string>> found;
    std::error_code ec;
    for (fs::directory_iterator it(dir, ec), end; !ec && it != end; it.increment(ec))
        if (const auto n = recorded_file_number(it->path().filename().string()))
            found.emplace_back(*n, it->path().string());
    if (ec) return make_error(ErrorCode::SystemError, fmt::format("{}: {}", dir, ec.message()));
    std::sort(found.begin(), found.end());
    std::vector<std::string> out;
    out.reserve(found.size());
    for (auto& [n, path] : found)
        out.push_back(std::move(path));
    return out;
}

namespace {
// The value of field `name` of the status line in the text section at the start of `bytes`
// set to `value` (hex, as qTStatus has it); nothing if the line or field is not there.
void restate_field(std::vector<std::uint8_t>& bytes, std::string_view name, std::uint64_t value) {
    const std::string_view all(reinterpret_cast<const char*>(bytes.data()), bytes.size());
    const std::size_t text_end = all.find("\n\n");
    const std::size_t line = all.substr(0, text_end).find("\nstatus ");
    if (line == std::string_view::npos) return;
    const std::size_t line_end = all.find('\n', line + 1);
    const std::string key = fmt::format(";{}:", name);
    std::size_t at = all.substr(0, line_end).find(key, line);
    if (at == std::string_view::npos) return;
    at += key.size();
    const std::size_t end = std::min(all.find(';', at), line_end);
    const std::string hex = fmt::format("{:x}", value);
    bytes.erase(bytes.begin() + static_cast<long>(at), bytes.begin() + static_cast<long>(end));
    bytes.insert(bytes.begin() + static_cast<long>(at), hex.begin(), hex.end());
}
} // namespace

Result<TraceFolder> read_trace_folder(const std::string& dir) {
    auto paths = recorded_files(dir);
    if (!paths) return paths.error();
    std::vector<std::pair<std::string, Error>> skipped;
    // Which files are the newest run's: their text sections, newest first, back to the first
    // file with another start time.
    std::vector<std::string> run_paths;
    std::optional<TraceFile> newest;
    std::optional<std::uint64_t> run_start;
    std::size_t earlier = 0;
    for (auto it = paths->rbegin(); it != paths->rend(); ++it) {
        auto head = read_trace_file_head(*it);
        if (!head) {
            skipped.emplace_back(*it, head.error());
            continue;
        }
        const auto start = head->status() ? head->status()->start_time : std::nullopt;
        if (!newest) {
            run_start = start;
            newest.emplace(std::move(*head));
        } else if (start != run_start) {
            earlier = static_cast<std::size_t>(paths->rend() - it);
            break;
        }
        run_paths.push_back(*it);
    }
    if (!newest)
        return make_error(
            ErrorCode::NotFound,
            skipped.empty()
                ? fmt::format("{}: no recorded file (trace-NNNNNN.tf) in the folder", dir)
                : skipped.front().second.text);
    std::reverse(run_paths.begin(), run_paths.end());

    // The newest file's text section, then every file's whole frames, one file in memory at a
    // time, then the end.
    std::vector<std::uint8_t> bytes(newest->bytes().begin(),
                                    newest->bytes().begin() +
                                        static_cast<long>(newest->frame_section_offset()));
    newest.reset();
    std::vector<FolderPart> parts;
    std::size_t frames = 0;
    std::optional<std::uint64_t> next_in_run;
    for (const std::string& path : run_paths) {
        auto f = read_trace_file(path);
        if (!f) { // gone since it was listed (removed by the rotation), or unreadable now
            skipped.emplace_back(path, f.error());
            continue;
        }
        FolderPart part{path, frames, f->frames().size(), std::nullopt, 0, f->damage()};
        if (f->status()) part.recorded = f->status()->recorded;
        if (part.recorded) {
            const std::uint64_t expected = next_in_run.value_or(0);
            if (part.recorded->first > expected)
                part.missing_before = part.recorded->first - expected;
            next_in_run = part.recorded->first + part.frames;
        }
        if (!f->frames().empty()) {
            const Frame& last = f->frames().back();
            const auto from = f->bytes().begin() + static_cast<long>(f->frames().front().offset);
            const auto to = f->bytes().begin() + static_cast<long>(last.offset + last.bytes.size());
            bytes.insert(bytes.end(), from, to);
        }
        frames += part.frames;
        parts.push_back(std::move(part));
    }
    bytes.insert(bytes.end(), std::begin(trace::kEndOfFrames), std::end(trace::kEndOfFrames));
    // The status is the whole folder's: its frames, and where the first part begins in the run.
    restate_field(bytes, "tframes", frames);
    if (!parts.empty() && parts.front().recorded)
        restate_field(bytes, "rfirst", parts.front().recorded->first);
    auto merged = parse_trace_file(std::move(bytes));
    if (!merged) return merged.error();
    return TraceFolder{std::move(*merged), std::move(parts), earlier, std::move(skipped)};
}

} // namespace tpagent::tracefile
