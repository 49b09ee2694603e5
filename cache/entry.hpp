#pragma once
// One cache entry: the stage artifacts of a kernel build and its meta.json.
//
// On disk an entry is the folder `<store>/<key>/` holding each file and
// meta.json. meta.json records the caller's fields (spec, identity, resource
// report, compile times) and the store's own: the key, the format, the
// creation time, for every file its size and SHA-256, and last meta_sha256,
// the SHA-256 of meta.json itself without that field, so damage to any field
// (not only to a file) is detected. Like every checksum here it guards
// against damage, not against someone who can write the cache: see README.md,
// "Trust model".

#include <cstdint>
#include <functional>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

namespace moejit::cache {

inline constexpr std::string_view k_meta_file = "meta.json";
// 2: meta.json carries meta_sha256. An entry of another format is stale (left
// by another moejit), not damaged.
inline constexpr int k_entry_format = 2;

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

// True when `meta` is an object whose "format" is an integer other than
// k_entry_format: an entry another moejit wrote, which this one neither
// reads nor counts as damage. *why says which format.
bool foreign_format(const nlohmann::json& meta, std::string* why);

// Checks the store's fields of a sealed meta.json: its format and key, that
// created_unix is a time, that "files" maps plain names to a size within
// k_max_file_bytes and a SHA-256, and meta_sha256. Returns the first problem,
// naming the field, its value (a short excerpt) and what is allowed; empty if none.
std::string check_meta(std::string_view key, const nlohmann::json& meta);

// check_meta(), then `files` against it: the same file set, sizes and
// SHA-256. Returns the first disagreement, empty if none.
std::string check_sealed(std::string_view key, const nlohmann::json& meta, const std::vector<EntryFile>& files);

// The SHA-256 of `meta` without its meta_sha256 field.
std::string meta_checksum(const nlohmann::json& meta);

// The "summary" field (a human-readable spec) as printable text, or "?".
std::string meta_summary(const nlohmann::json& meta);

// What an entry must satisfy beyond its checksums for a load to count as a
// hit: the caller's rules (runtime/ checks that a kernel entry can be loaded
// and that its contents belong to its key). A problem makes the entry
// corrupt, or stale when the entry is whole but was built by another toolkit
// or moejit (it can never be loaded here, and it is not damage either).
struct EntryVerdict {
  std::string problem;  // empty: the entry is good
  bool stale = false;
};
using EntryCheck = std::function<EntryVerdict(std::string_view key, const Entry& entry)>;

}  // namespace moejit::cache
