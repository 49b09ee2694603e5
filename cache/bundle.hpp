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

// Writes atomically (temp file + rename). Throws BundleError.
void write_bundle(const std::string& path, const std::vector<BundleEntry>& entries);

// Reads and verifies every checksum (the manifest's, each file's, and each
// entry's files against its meta.json). Throws BundleError naming what failed.
std::vector<BundleEntry> read_bundle(const std::string& path);

}  // namespace moejit::cache
