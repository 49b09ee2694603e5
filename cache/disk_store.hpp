#pragma once
// The on-disk half of the cache: entry folders under `<root>/v1/`.
//
//   <root>/v1/<key>/            a published entry (never modified in place)
//   <root>/v1/<key>.lock        the per-key lock file, present only while held
//   <root>/v1/.tmp-<key>-<id>/  an entry being written; renamed to <key>/
//   <root>/v1/.trash-<key>-<id>/ an entry being deleted; renamed away first
//
// Entries appear and disappear only by rename(2), so a reader without the
// lock sees a whole entry or none. Nothing here throws on I/O errors or on
// what it finds on disk: they come back as statuses, and the policy (warn,
// degrade) is the caller's.
//
// Everything below <root> is reached through directory descriptors without
// following a symbolic link, and only regular files are read (fs_util.hpp): a
// link, FIFO or device in the cache is damage, reported like a bad checksum.

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "cache/entry.hpp"
#include "cache/file_lock.hpp"
#include "cache/fs_util.hpp"

namespace moejit::cache {

// A temp or trash folder older than this belongs to a dead process.
inline constexpr std::int64_t k_stale_seconds = 300;

// stale: a whole entry that another moejit wrote (another entry format) or,
// with an entry check, built by another toolkit: never loaded, not damage.
enum class LoadStatus { hit, absent, corrupt, stale };

struct Loaded {
  LoadStatus status = LoadStatus::absent;
  Entry entry;          // on a hit: the files and the sealed meta.json
  std::string problem;  // when corrupt or stale: what disagreed
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
  // `check` (may be empty) runs on every load whose checksums pass.
  explicit DiskStore(std::string root, EntryCheck check = {});

  const std::string& root() const { return root_; }
  const std::string& dir() const { return dir_; }
  std::string entry_path(std::string_view key) const;
  std::string lock_path(std::string_view key) const;

  // The <root>/v1 folder, created first when `create`. Fails (with *error and
  // *err) when it is absent, or is not a real folder (a link is not followed).
  fs::Dir open(bool create, std::string* error, int* err = nullptr) const;
  // The per-key lock (creates the store). See FileLock::acquire.
  std::optional<FileLock> lock(std::string_view key, std::string* error, bool* unsupported = nullptr) const;

  // Reads and verifies every file against meta.json, then runs the check.
  Loaded load(std::string_view key) const;
  const EntryCheck& check() const { return check_; }
  // Writes a temp folder, fsyncs it, renames it into place. If the key is
  // already there (a racing publisher won), keeps that entry. The same as
  // stage() then commit().
  PublishStatus publish(std::string_view key, const Entry& entry, std::string* error);

  // The halves of publish(), so a caller can write many entries before it
  // makes any of them visible (an import: all or nothing). stage() writes the
  // sealed entry into a fresh temp folder and fsyncs it; nullopt (with
  // *error) when it cannot. commit() renames it into place; discard() deletes it.
  struct Staged {
    std::string key, folder;
  };
  std::optional<Staged> stage(std::string_view key, const Entry& entry, std::string* error);
  PublishStatus commit(const Staged& staged, std::string* error);
  void discard(const Staged& staged);
  // Marks staged folders as in use now: sweep_stale() takes a temp folder k_stale_seconds old for a crashed
  // writer's, so a caller that holds staged folders longer than that (a large import) refreshes them.
  void keep_staged(const std::vector<Staged>& staged) const;
  // Renames the entry away, then deletes it. False (with *error) if it was
  // not there or could not be renamed; *absent tells the first apart (another
  // process removed it first: a clear that races an eviction is not a failure).
  bool remove(std::string_view key, std::string* error = nullptr, bool* absent = nullptr);
  // Records a use for LRU eviction (the mtime of meta.json).
  bool touch(std::string_view key) const;
  // Whether an entry folder with a meta.json is there (cheap; not verified):
  // for a caller that published or loaded the key and asks if it is still kept.
  bool contains(std::string_view key) const;

  // Every folder named like a key, oldest use first; one whose meta.json
  // cannot be read or parsed is listed with summary "?". *error is set when
  // the store exists but cannot be listed (not a folder, a link, no
  // permission); an absent store is empty, not an error.
  std::vector<EntryInfo> list(std::string* error = nullptr) const;
  std::uint64_t total_bytes() const;
  // Deletes least-recently-used entries (never one in `keep`, never a locked
  // key) until the store holds at most `max_bytes`. Returns the entries deleted.
  std::vector<EntryInfo> evict_to(std::uint64_t max_bytes, const std::vector<std::string>& keep);
  std::vector<EntryInfo> evict_to(std::uint64_t max_bytes, std::string_view keep);
  // Removes temp and trash folders older than `age_seconds`, lock files
  // nobody holds (they can only be leftovers of a crash) and anything under a
  // lock's name that is not a regular file.
  SweepResult sweep_stale(std::int64_t age_seconds = k_stale_seconds);
  // Deletes every entry; returns how many. Each entry that could not be
  // removed adds "<key>: <why>" to *failures.
  int clear(std::vector<std::string>* failures = nullptr);

 private:
  std::string root_, dir_;
  EntryCheck check_;
};

}  // namespace moejit::cache
