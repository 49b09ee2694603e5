#pragma once
// The on-disk half of the cache: entry folders under `<root>/v1/`.
//
//   <root>/v1/<key>/            a published entry (never modified in place)
//   <root>/v1/<key>.lock        the per-key lock file, present only while held
//   <root>/v1/.tmp-<key>-<id>/  an entry being written; renamed to <key>/
//   <root>/v1/.trash-<key>-<id>/ an entry being deleted; renamed away first
//
// Entries appear and disappear only by rename(2), so a reader without the
// lock sees a whole entry or none. Nothing here throws on I/O errors: they
// come back as statuses, and the policy (warn, degrade) is the caller's.

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "cache/entry.hpp"

namespace moejit::cache {

// A temp or trash folder older than this belongs to a dead process.
inline constexpr std::int64_t k_stale_seconds = 300;

enum class LoadStatus { hit, absent, corrupt };

struct Loaded {
  LoadStatus status = LoadStatus::absent;
  Entry entry;          // on a hit: the files and the sealed meta.json
  std::string problem;  // when corrupt: what disagreed
};

enum class PublishStatus { published, kept_existing, failed };

struct EntryInfo {
  std::string key;
  std::string summary;
  std::uint64_t bytes = 0;  // on disk, meta.json included
  std::int64_t created_unix = 0;
  std::int64_t last_used_unix = 0;
};

struct SweepResult {
  int temp_folders = 0, trash_folders = 0, lock_files = 0;
};

class DiskStore {
 public:
  explicit DiskStore(std::string root);

  const std::string& root() const { return root_; }
  const std::string& dir() const { return dir_; }
  std::string entry_path(std::string_view key) const;
  std::string lock_path(std::string_view key) const;

  // Reads and verifies every file against meta.json.
  Loaded load(std::string_view key) const;
  // Writes a temp folder, fsyncs it, renames it into place. If the key is
  // already there (a racing publisher won), keeps that entry.
  PublishStatus publish(std::string_view key, const Entry& entry, std::string* error);
  // Renames the entry away, then deletes it. False if it was not there.
  bool remove(std::string_view key);
  // Records a use for LRU eviction (the mtime of meta.json).
  bool touch(std::string_view key) const;

  std::vector<EntryInfo> list() const;  // oldest use first
  std::uint64_t total_bytes() const;
  // Deletes least-recently-used entries (never `keep`, never a locked key)
  // until the store holds at most `max_bytes`. Returns the entries deleted.
  std::vector<EntryInfo> evict_to(std::uint64_t max_bytes, std::string_view keep);
  // Removes temp and trash folders older than `age_seconds` and lock files
  // nobody holds (they can only be leftovers of a crash).
  SweepResult sweep_stale(std::int64_t age_seconds = k_stale_seconds);
  // Deletes every entry; returns how many.
  int clear();

 private:
  std::string root_, dir_;
};

}  // namespace moejit::cache
