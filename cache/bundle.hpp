#pragma once
// A relocatable cache bundle: one file that carries entries between machines
// (`moejit cache export` / `import`).
//
//   moejit-cache-bundle 1\n
//   <manifest bytes> <manifest SHA-256>\n
//   <manifest JSON>
//   <payload: every file of every entry, back to back>
//
// The manifest lists each entry's key, its sealed meta.json and, per file,
// the offset, size and SHA-256 in the payload. Paths never appear: an entry is
// found by its key on any machine. Checking the compiler identity against the
// local toolkit is the importer's job (cache/ does not know the toolkit).
//
// A bundle is untrusted input until checked: the header is read before any
// allocation it asks for (a manifest larger than the file, or than
// k_max_manifest_bytes, is refused first), the manifest is bounded JSON, and
// every field is checked by name. The checksums detect damage in transit; a
// bundle is not signed, so they do not tell who made it (README.md, "Trust
// model").

#include <cstdint>
#include <stdexcept>
#include <string>
#include <vector>

#include "cache/entry.hpp"

namespace moejit::cache {

class BundleError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

struct BundleEntry {
  std::string key;
  Entry entry;  // meta: the sealed meta.json it had in the exporting cache
};

// Thousands of kernels' meta.json; far below what would strain memory.
inline constexpr std::uint64_t k_max_manifest_bytes = std::uint64_t(64) << 20;

// Writes atomically (temp file + fsync + rename). `path` must be absent or a
// regular file: a FIFO, device, directory or symbolic link there is refused,
// never replaced. Throws BundleError.
void write_bundle(const std::string& path, const std::vector<BundleEntry>& entries);

// Reads a bundle an entry at a time, so an importer holds one entry's files,
// not the bundle (which may be many GB). The constructor opens a regular file
// and checks the header, the manifest's SHA-256 and every manifest field (keys,
// offsets inside the payload, sizes within the limits) before any payload byte
// is read; read(i) reads entry i's files and verifies each one's SHA-256 and
// the entry's meta.json. Throws BundleError naming what failed, with the field,
// a short excerpt and what is allowed.
class BundleReader {
 public:
  explicit BundleReader(const std::string& path);
  ~BundleReader();
  BundleReader(const BundleReader&) = delete;
  BundleReader& operator=(const BundleReader&) = delete;

  size_t size() const { return items_.size(); }
  const std::string& key(size_t i) const { return items_.at(i).key; }
  // Entry i's meta.json as the manifest has it: checked against its files only by read(i).
  const nlohmann::json& meta(size_t i) const { return items_.at(i).meta; }
  // What entry i takes in a cache: its files and its meta.json, from the manifest alone.
  std::uint64_t bytes(size_t i) const;
  BundleEntry read(size_t i) const;

 private:
  struct File {
    std::string name, sha256;
    std::uint64_t offset = 0, size = 0;
  };
  struct Item {
    std::string key;
    nlohmann::json meta;
    std::vector<File> files;
  };
  std::string path_;
  int fd_ = -1;
  std::uint64_t payload_start_ = 0;
  std::vector<Item> items_;
};

// Every entry of a bundle at once (BundleReader::read of each).
std::vector<BundleEntry> read_bundle(const std::string& path);

}  // namespace moejit::cache
