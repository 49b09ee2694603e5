#include "cache/disk_store.hpp"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <stdexcept>

#include "cache/bounded_json.hpp"
#include "cache/key.hpp"
#include "cache/printable.hpp"

namespace moejit::cache {

namespace {
constexpr std::string_view k_store_folder = "v1";
constexpr std::string_view k_tmp_prefix = ".tmp-";
constexpr std::string_view k_trash_prefix = ".trash-";
constexpr std::string_view k_lock_suffix = ".lock";

bool starts_with(std::string_view s, std::string_view p) {
  return s.substr(0, p.size()) == p;
}
bool ends_with(std::string_view s, std::string_view p) {
  return s.size() >= p.size() && s.substr(s.size() - p.size()) == p;
}

// The regular files' sizes (an entry holds no folders).
std::uint64_t folder_bytes(const fs::Dir& dir) {
  std::uint64_t n = 0;
  for (const std::string& name : fs::names_in(dir))
    if (const auto st = fs::stat_in(dir, name); st && S_ISREG(st->st_mode))
      n += static_cast<std::uint64_t>(st->st_size);
  return n;
}

// Whether `key` in `store` still names the folder `entry` was opened as: not
// when a remover renamed it away while it was being read.
bool still_named(const fs::Dir& store, std::string_view key, const fs::Dir& entry) {
  struct stat opened {};
  const std::optional<struct stat> named = fs::stat_in(store, key);
  return ::fstat(entry.fd(), &opened) == 0 && named && named->st_ino == opened.st_ino && named->st_dev == opened.st_dev;
}

}  // namespace

DiskStore::DiskStore(std::string root, EntryCheck check)
    : root_(std::move(root)), dir_(root_ + "/" + std::string(k_store_folder)), check_(std::move(check)) {}

std::string DiskStore::entry_path(std::string_view key) const {
  return dir_ + "/" + std::string(key);
}
std::string DiskStore::lock_path(std::string_view key) const {
  return dir_ + "/" + std::string(key) + std::string(k_lock_suffix);
}

fs::Dir DiskStore::open(bool create, std::string* error, int* err) const {
  if (root_.empty()) {
    if (error) *error = "no cache directory";
    if (err) *err = ENOENT;
    return {};
  }
  if (create && !fs::make_dirs(root_, error)) return {};
  const fs::Dir root = fs::Dir::open(root_, error, err);
  if (!root) return {};
  return create ? root.make_sub(k_store_folder, error) : root.sub(k_store_folder, error, err);
}

std::optional<FileLock> DiskStore::lock(std::string_view key, std::string* error, bool* unsupported) const {
  const fs::Dir store = open(true, error);
  if (!store) return std::nullopt;
  return FileLock::acquire(store, std::string(key) + std::string(k_lock_suffix), error, unsupported);
}

Loaded DiskStore::load(std::string_view key) const {
  Loaded out;
  const fs::Dir store = open(false, nullptr);
  if (!store) return out;  // no store: no entry
  auto corrupt = [&](std::string why) {
    out.status = LoadStatus::corrupt;
    out.problem = std::move(why);
    out.entry = Entry{};
    return out;
  };
  auto absent = [&] {
    out = Loaded{};
    return out;
  };
  std::string error;
  int err = 0;
  fs::Dir entry = store.sub(key, &error, &err);
  if (!entry) {
    // No folder is a miss (also when a path component is not a directory: ENOTDIR).
    if (err == ENOENT) return absent();
    const std::optional<struct stat> st = fs::stat_in(store, key);
    return corrupt("the entry is " + (st ? fs::kind_of(st->st_mode) : fs::error_text(err)) + ", not a folder");
  }
  entry.set_path("");  // problems name files relative to the entry
  std::string meta_text;
  if (!fs::read_file(entry, k_meta_file, k_max_meta_bytes, meta_text, &error, &err)) {
    // Renamed away by a remover while we read: a miss, not damage.
    if (err == ENOENT && !still_named(store, key, entry)) return absent();
    return corrupt(error);
  }
  try {
    out.entry.meta = parse_json(meta_text, {k_max_meta_bytes, k_max_json_depth});
  } catch (const JsonInputError& e) {
    return corrupt(std::string("meta.json: ") + e.what());
  }
  if (std::string why; foreign_format(out.entry.meta, &why)) {
    out.status = LoadStatus::stale;
    out.problem = std::move(why);
    out.entry = Entry{};
    return out;
  }
  if (std::string why = check_meta(key, out.entry.meta); !why.empty()) return corrupt(std::move(why));
  // check_meta vouched for the names (plain) and sizes (within k_max_file_bytes).
  for (const auto& [name, info] : out.entry.meta.at("files").items()) {
    EntryFile f{name, {}};
    if (!fs::read_file(entry, name, info.at("size").get<std::uint64_t>(), f.bytes, &error, &err)) {
      if (err == ENOENT && !still_named(store, key, entry)) return absent();
      if (err == EFBIG) return corrupt(printable(name) + ": size differs from meta.json");
      return corrupt(printable(error, 512));
    }
    out.entry.files.push_back(std::move(f));
  }
  if (std::string why = check_sealed(key, out.entry.meta, out.entry.files); !why.empty())
    return corrupt(std::move(why));
  if (check_) {
    EntryVerdict verdict;
    try {
      verdict = check_(key, out.entry);
    } catch (const std::exception& e) {
      verdict.problem = printable(e.what(), 300);  // a check that throws has found a problem too
    }
    if (verdict.stale) {
      out.status = LoadStatus::stale;
      out.problem = std::move(verdict.problem);
      out.entry = Entry{};
      return out;
    }
    if (!verdict.problem.empty()) return corrupt(std::move(verdict.problem));
  }
  out.status = LoadStatus::hit;
  return out;
}

std::optional<DiskStore::Staged> DiskStore::stage(std::string_view key, const Entry& entry, std::string* error) {
  const fs::Dir store = open(true, error);
  if (!store) return std::nullopt;
  Staged staged{std::string(key),
                std::string(k_tmp_prefix) + std::string(key.substr(0, 16)) + "-" + fs::unique_suffix()};
  if (::mkdirat(store.fd(), staged.folder.c_str(), 0755) != 0) {
    if (error) *error = "cannot create " + store.path_of(staged.folder) + ": " + fs::error_text(errno);
    return std::nullopt;
  }
  auto fail = [&] {
    fs::remove_tree(store, staged.folder);
    return std::nullopt;
  };
  const fs::Dir folder = store.sub(staged.folder, error);
  if (!folder) return fail();
  std::string meta_text;
  try {
    const nlohmann::json meta = sealed_meta(key, entry, fs::now_seconds());
    // Never write a meta.json that load() would refuse to read.
    if (nests_deeper_than(meta, k_max_json_depth))
      throw std::invalid_argument("meta.json would nest deeper than " + std::to_string(k_max_json_depth) + " levels");
    meta_text = meta.dump(2) + "\n";
    if (meta_text.size() > k_max_meta_bytes)
      throw std::invalid_argument("meta.json would be " + std::to_string(meta_text.size()) +
                                  " bytes, over the limit of " + std::to_string(k_max_meta_bytes));
  } catch (const std::exception& e) {
    if (error) *error = e.what();
    return fail();
  }
  for (const EntryFile& f : entry.files)
    if (!fs::write_file_synced(folder, f.name, f.bytes, error)) return fail();
  // meta.json last: an entry folder with a meta.json is complete.
  if (!fs::write_file_synced(folder, k_meta_file, meta_text, error)) return fail();
  if (!fs::fsync_dir(folder, error)) return fail();
  return staged;
}

PublishStatus DiskStore::commit(const Staged& staged, std::string* error) {
  const fs::Dir store = open(false, error);
  if (!store) return PublishStatus::failed;
  if (const int err = fs::rename_in(store, staged.folder, staged.key); err != 0) {
    fs::remove_tree(store, staged.folder);
    if (err == ENOTEMPTY || err == EEXIST) return PublishStatus::kept_existing;
    if (error) *error = "cannot rename into " + store.path_of(staged.key) + ": " + fs::error_text(err);
    return PublishStatus::failed;
  }
  // The entry is in place; a failed directory fsync only weakens durability.
  fs::fsync_dir(store, nullptr);
  return PublishStatus::published;
}

void DiskStore::keep_staged(const std::vector<Staged>& staged) const {
  const fs::Dir store = open(false, nullptr);
  if (!store) return;
  for (const Staged& s : staged) fs::touch(store, s.folder);
}

void DiskStore::discard(const Staged& staged) {
  if (const fs::Dir store = open(false, nullptr)) fs::remove_tree(store, staged.folder);
}

PublishStatus DiskStore::publish(std::string_view key, const Entry& entry, std::string* error) {
  const std::optional<Staged> staged = stage(key, entry, error);
  return staged ? commit(*staged, error) : PublishStatus::failed;
}

bool DiskStore::remove(std::string_view key, std::string* error, bool* absent) {
  if (absent) *absent = false;
  const fs::Dir store = open(false, error);
  if (!store) return false;
  const std::string trash = std::string(k_trash_prefix) + std::string(key.substr(0, 16)) + "-" + fs::unique_suffix();
  if (const int err = fs::rename_in(store, key, trash); err != 0) {
    if (absent) *absent = err == ENOENT;
    if (error) *error = "cannot rename " + store.path_of(key) + " away: " + fs::error_text(err);
    return false;
  }
  fs::remove_tree(store, trash);
  return true;
}

bool DiskStore::touch(std::string_view key) const {
  const fs::Dir store = open(false, nullptr);
  if (!store) return false;
  const fs::Dir entry = store.sub(key, nullptr);
  return entry && fs::touch(entry, k_meta_file);
}

bool DiskStore::contains(std::string_view key) const {
  const fs::Dir store = open(false, nullptr);
  const fs::Dir entry = store ? store.sub(key, nullptr) : fs::Dir();
  const std::optional<struct stat> meta = entry ? fs::stat_in(entry, k_meta_file) : std::nullopt;
  return meta && S_ISREG(meta->st_mode);
}

std::vector<EntryInfo> DiskStore::list(std::string* error) const {
  std::vector<EntryInfo> out;
  std::string why;
  int err = 0;
  const fs::Dir store = open(false, &why, &err);
  if (!store) {
    if (err != ENOENT && error) *error = why;
    return out;
  }
  for (const std::string& name : fs::names_in(store, error)) {
    if (!is_key(name)) continue;
    EntryInfo info;
    info.key = name;
    info.summary = "?";
    if (const fs::Dir entry = store.sub(name, nullptr)) {
      if (const auto st = fs::stat_in(entry, k_meta_file); st && S_ISREG(st->st_mode))
        info.last_used_unix = static_cast<std::int64_t>(st->st_mtim.tv_sec);
      std::string text;
      if (fs::read_file(entry, k_meta_file, k_max_meta_bytes, text, nullptr)) {
        try {
          const nlohmann::json meta = parse_json(text, {k_max_meta_bytes, k_max_json_depth});
          info.summary = meta_summary(meta);
          // Whatever the type of a field, listing goes on: verify names the damage.
          if (meta.is_object())
            if (const auto it = meta.find("created_unix"); it != meta.end() && it->is_number_integer())
              info.created_unix = it->get<std::int64_t>();
        } catch (const JsonInputError&) {
          // Listed with summary "?"; loading it reports why.
        }
      }
      info.bytes = folder_bytes(entry);
    }
    out.push_back(std::move(info));
  }
  std::sort(out.begin(), out.end(), [](const EntryInfo& a, const EntryInfo& b) {
    return a.last_used_unix != b.last_used_unix ? a.last_used_unix < b.last_used_unix : a.key < b.key;
  });
  return out;
}

std::uint64_t DiskStore::total_bytes() const {
  std::uint64_t n = 0;
  for (const EntryInfo& e : list()) n += e.bytes;
  return n;
}

std::vector<EntryInfo> DiskStore::evict_to(std::uint64_t max_bytes, std::string_view keep) {
  return evict_to(max_bytes, std::vector<std::string>{std::string(keep)});
}

std::vector<EntryInfo> DiskStore::evict_to(std::uint64_t max_bytes, const std::vector<std::string>& keep) {
  std::vector<EntryInfo> entries = list();
  std::uint64_t total = 0;
  for (const EntryInfo& e : entries) total += e.bytes;
  std::vector<EntryInfo> evicted;
  const fs::Dir store = open(false, nullptr);
  if (!store) return evicted;
  for (const EntryInfo& e : entries) {
    if (total <= max_bytes) break;
    if (std::find(keep.begin(), keep.end(), e.key) != keep.end()) continue;
    // A held lock means someone is replacing this entry right now: leave it. Where the file system refuses
    // flock nobody holds one, and publishing works without (it renames whole entries into place): evict as
    // readers expect, by renaming the entry away, or the cap would never hold there.
    bool unsupported = false;
    std::optional<FileLock> lock = FileLock::try_acquire(store, e.key + std::string(k_lock_suffix), &unsupported);
    if (!lock && !unsupported) continue;
    if (remove(e.key)) {
      total -= std::min(total, e.bytes);
      evicted.push_back(e);
    }
  }
  return evicted;
}

SweepResult DiskStore::sweep_stale(std::int64_t age_seconds) {
  SweepResult r;
  const fs::Dir store = open(false, nullptr);
  if (!store) return r;
  const std::int64_t cutoff = fs::now_seconds() - age_seconds;
  for (const std::string& name : fs::names_in(store)) {
    const std::optional<struct stat> st = fs::stat_in(store, name);
    if (!st) continue;
    const bool tmp = starts_with(name, k_tmp_prefix), trash = starts_with(name, k_trash_prefix);
    if (tmp || trash) {
      if (S_ISDIR(st->st_mode) && static_cast<std::int64_t>(st->st_mtim.tv_sec) > cutoff) continue;
      fs::remove_tree(store, name);
      ++(tmp ? r.temp_folders : r.trash_folders);
    } else if (ends_with(name, k_lock_suffix)) {
      if (!S_ISREG(st->st_mode) && !S_ISDIR(st->st_mode)) {
        // A link or FIFO under a lock's name was never made by a lock.
        if (::unlinkat(store.fd(), name.c_str(), 0) == 0) ++r.lock_files;
      } else if (S_ISREG(st->st_mode) && FileLock::try_acquire(store, name)) {
        // Taking it proves nobody holds it; the release unlinks it safely.
        ++r.lock_files;
      }
    }
  }
  return r;
}

int DiskStore::clear(std::vector<std::string>* failures) {
  int n = 0;
  const fs::Dir store = open(false, nullptr);
  if (!store) return 0;
  for (const std::string& name : fs::names_in(store)) {
    if (!is_key(name)) continue;
    std::string why;
    if (remove(name, &why))
      ++n;
    else if (failures)
      failures->push_back(name.substr(0, 16) + ": " + why);
  }
  return n;
}

}  // namespace moejit::cache
