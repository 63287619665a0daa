// A folder's entries synced (fsync of the folder): a file's name, made or changed, survives a
// power cut too. Shared by tpagent's recordings and tpdump record's files on a host.
#pragma once
#include <string>

namespace tpagent {

// Best effort: a folder that cannot be opened is left as it is.
void sync_dir(const std::string& dir);

} // namespace tpagent
