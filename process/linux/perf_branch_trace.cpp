#include "process/linux/perf_branch_trace.hpp"
#include "base/proc_files.hpp"
#include <algorithm>
#include <cerrno>
#include <cstring>
#include <fmt/format.h>
#include <linux/perf_event.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <unistd.h>
#include <vector>

namespace tpagent::process {
namespace {

std::string cpu_vendor() {
    const std::string info = read_file("/proc/cpuinfo");
    const auto at = info.find("vendor_id");
    if (at == std::string::npos) return {};
    const auto colon = info.find(':', at), end = info.find('\n', at);
    if (colon == std::string::npos || colon > end) return {};
    std::string v = info.substr(colon + 1, end - colon - 1);
    v.erase(0, v.find_first_not_of(" \t"));
    return v;
}

std::string open_failure() {
    const int err = errno;
    std::string why = std::strerror(err);
    if (err == EPERM || err == EACCES) {
        const std::string level = read_file("/proc/sys/kernel/perf_event_paranoid");
        if (!level.empty())
            why += fmt::format(" (kernel.perf_event_paranoid is {}: 2 or less allows it)",
                               level.substr(0, level.find('\n')));
    } else if (err == ENOENT || err == EOPNOTSUPP || err == ENODEV) {
        why = "the kernel offers no branch sampling here (no PMU, as in most virtual machines)";
    }
    return why;
}

} // namespace

static_assert(sizeof(PerfBranchStore::BtsSample) == sizeof(perf_event_header) + 16);

Result<std::unique_ptr<PerfBranchStore>> PerfBranchStore::open(pid_t tid, std::size_t size_bytes) {
    // Only Intel CPUs have BTS; on others a period-1 branch event is a sample per branch taken
    // by interrupt, without the destination.
    const std::string vendor = cpu_vendor();
    if (vendor.find("GenuineIntel") == std::string::npos)
        return make_error(ErrorCode::Unsupported,
                          fmt::format("BTS is an Intel CPU's (this CPU is {})",
                                      vendor.empty() ? "unknown" : vendor));
    perf_event_attr attr{};
    attr.size = sizeof attr;
    attr.type = PERF_TYPE_HARDWARE;
    attr.config = PERF_COUNT_HW_BRANCH_INSTRUCTIONS;
    attr.sample_period = 1; // every branch: the kernel uses BTS for this
    attr.sample_type = PERF_SAMPLE_IP | PERF_SAMPLE_ADDR;
    attr.exclude_kernel = 1;
    attr.exclude_hv = 1;
    attr.exclude_idle = 1;
    errno = 0;
    const int fd =
        static_cast<int>(syscall(SYS_perf_event_open, &attr, tid, -1, -1, PERF_FLAG_FD_CLOEXEC));
    if (fd < 0) return make_error(ErrorCode::Unsupported, open_failure());
    std::unique_ptr<PerfBranchStore> store(new PerfBranchStore);
    store->fd_ = fd;
    const std::size_t page = static_cast<std::size_t>(sysconf(_SC_PAGESIZE));
    std::size_t pages = 1;
    while (pages * page < size_bytes && pages < (std::size_t{1} << 20))
        pages <<= 1;
    for (; pages > 0; pages >>= 1) {
        const std::size_t length = (pages + 1) * page;
        void* m = mmap(nullptr, length, PROT_READ, MAP_SHARED, fd, 0);
        if (m == MAP_FAILED) continue;
        store->map_ = m;
        store->map_size_ = length;
        break;
    }
    if (!store->map_)
        return make_error(ErrorCode::SystemError,
                          fmt::format("cannot map the BTS ring: {}", std::strerror(errno)));
    const auto* header = static_cast<const perf_event_mmap_page*>(store->map_);
    store->data_ = static_cast<const std::uint8_t*>(store->map_) + header->data_offset;
    store->data_size_ = header->data_size;
    return store;
}

PerfBranchStore::~PerfBranchStore() {
    if (map_) munmap(map_, map_size_);
    if (fd_ >= 0) close(fd_);
}

void PerfBranchStore::drain(BranchRing& ring) {
    const auto* header = static_cast<const perf_event_mmap_page*>(map_);
    // The CPU's last records can still be on their way as the thread stops: read again while
    // the head moves under the read (as gdb does).
    std::vector<BtsSample> found;
    std::uint64_t head = 0;
    for (int attempt = 0; attempt < 5; ++attempt) {
        head = __atomic_load_n(&header->data_head, __ATOMIC_ACQUIRE);
        found = read_back(head);
        if (head == __atomic_load_n(&header->data_head, __ATOMIC_ACQUIRE)) break;
    }
    if (head - drained_ > data_size_) ring.note_lost(); // written over before being read
    for (auto it = found.rbegin(); it != found.rend(); ++it)
        ring.push(it->from, it->to);
    drained_ = head;
}

// The samples written since the last drain, newest first (the ring is overwritten, so it is
// read backwards; records are of one size, anything else ends the read).
std::vector<PerfBranchStore::BtsSample> PerfBranchStore::read_back(std::uint64_t head) const {
    const std::uint64_t span = std::min<std::uint64_t>(head - drained_, data_size_);
    std::vector<BtsSample> found;
    for (std::uint64_t back = sizeof(BtsSample); back <= span; back += sizeof(BtsSample)) {
        BtsSample s{};
        const std::uint64_t at = head - back;
        for (std::size_t i = 0; i < sizeof s; ++i)
            reinterpret_cast<std::uint8_t*>(&s)[i] = data_[(at + i) % data_size_];
        if (s.type != PERF_RECORD_SAMPLE || s.size != sizeof s) break;
        if (s.from >> 63) continue; // a kernel address: not the program's
        found.push_back(s);
    }
    return found;
}

std::string why_no_intel_pt() {
    if (access("/sys/bus/event_source/devices/intel_pt/type", R_OK) == 0)
        return "the CPU has it, but tpagent records the BTS format only (record btrace bts)";
    return "the kernel has no intel_pt event source (not an Intel CPU with it, or a virtual "
           "machine)";
}

} // namespace tpagent::process
