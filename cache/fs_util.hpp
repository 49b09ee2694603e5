#pragma once
// The few POSIX file operations the cache needs, with errors returned (not
// thrown): a cache that cannot write must degrade, never abort the caller.

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

namespace moejit::cache::fs {

std::string error_text(int err);  // "No space left on device"

// Reads the whole file. On failure returns false and sets *err to errno.
bool read_file(const std::string& path, std::string& out, int* err = nullptr);

// Creates `path` (it must not exist), writes `bytes` and fsyncs it.
bool write_file_synced(const std::string& path, std::string_view bytes, std::string* error);

// fsync on a directory, so a rename or file creation inside it is durable.
bool fsync_dir(const std::string& path, std::string* error);

// mkdir -p.
bool make_dirs(const std::string& path, std::string* error);

// rm -rf that never throws: a concurrent remover may already have taken parts.
void remove_tree(const std::string& path) noexcept;

// "<pid>-<16 random hex>": unique among processes and threads on every host
// that shares the cache directory.
std::string unique_suffix();

// Sets the modification time to now (the cache's cheap "last used" record).
bool touch(const std::string& path);

// Modification time in seconds since the epoch, nullopt if `path` is absent.
std::optional<std::int64_t> mtime_seconds(const std::string& path);

std::int64_t now_seconds();

}  // namespace moejit::cache::fs
