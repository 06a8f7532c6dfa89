// Replacing a file so that no reader, and no crash, ever sees it half written: checkpoints, caches,
// reports.
#pragma once
#include <string>

namespace kestrel {

// Writes `bytes` to path.tmp.<pid>, fsyncs it, renames it over `path` and fsyncs the folder, so readers
// see either the old file or the whole new one. Creates missing parent folders. On error the temporary
// is removed and std::runtime_error is thrown. Two writes of one path must not overlap in one process.
void write_file_atomic(const std::string& path, const std::string& bytes);

}  // namespace kestrel
