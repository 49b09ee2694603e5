#pragma once
// One cache entry: the stage artifacts of a kernel build and its meta.json.
//
// On disk an entry is the folder `<store>/<key>/` holding each file and
// meta.json. meta.json records the caller's fields (spec, identity, resource
// report, compile times) and the store's own: the key, the format, the
// creation time and, for every file, its size and SHA-256.

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

namespace moejit::cache {

inline constexpr std::string_view k_meta_file = "meta.json";
inline constexpr int k_entry_format = 1;

// What the store reads at most. A kernel's meta.json (spec, identity, resource
// report, logs) is a few KiB and its files a few MiB; the bounds only keep a
// damaged or planted entry from exhausting memory.
inline constexpr std::uint64_t k_max_meta_bytes = std::uint64_t(4) << 20;
inline constexpr std::uint64_t k_max_file_bytes = std::uint64_t(256) << 20;

struct EntryFile {
  std::string name;  // a plain file name, e.g. "kernel.cubin"
  std::string bytes;

  friend bool operator==(const EntryFile&, const EntryFile&) = default;
};

struct Entry {
  std::vector<EntryFile> files;
  nlohmann::json meta = nlohmann::json::object();

  const EntryFile* file(std::string_view name) const;
  std::uint64_t bytes() const;  // the files' sizes, meta.json excluded
};

// The meta.json an entry is published with: `entry.meta` plus key, format,
// creation time and the per-file checksums. Throws std::invalid_argument for
// a file name that is not a plain name.
nlohmann::json sealed_meta(std::string_view key, const Entry& entry, std::int64_t created_unix);

// Checks `files` against a sealed meta.json: same key, same file set, sizes and
// SHA-256. Returns the first disagreement, empty if none.
std::string check_sealed(std::string_view key, const nlohmann::json& meta, const std::vector<EntryFile>& files);

// The "summary" field (a human-readable spec), or "?" when absent.
std::string meta_summary(const nlohmann::json& meta);

}  // namespace moejit::cache
