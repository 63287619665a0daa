// See dir_sync.hpp.
#include "base/dir_sync.hpp"
#include <fcntl.h>
#include <unistd.h>

namespace tpagent {

void sync_dir(const std::string& dir) {
    if (const int fd = open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC); fd >= 0) {
        fsync(fd);
        close(fd);
    }
}

} // namespace tpagent
