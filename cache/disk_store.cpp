#include "cache/disk_store.hpp"

#include <sys/stat.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <filesystem>

#include "cache/file_lock.hpp"
#include "cache/fs_util.hpp"
#include "cache/key.hpp"

namespace moejit::cache {
namespace stdfs = std::filesystem;

namespace {
constexpr std::string_view k_tmp_prefix = ".tmp-";
constexpr std::string_view k_trash_prefix = ".trash-";
constexpr std::string_view k_lock_suffix = ".lock";

bool starts_with(std::string_view s, std::string_view p) {
  return s.substr(0, p.size()) == p;
}
bool ends_with(std::string_view s, std::string_view p) {
  return s.size() >= p.size() && s.substr(s.size() - p.size()) == p;
}

std::uint64_t folder_bytes(const std::string& path) {
  std::uint64_t n = 0;
  std::error_code ec;
  for (const auto& f : stdfs::directory_iterator(path, ec)) {
    std::error_code fec;
    if (f.is_regular_file(fec)) n += f.file_size(fec);
  }
  return n;
}
}  // namespace

DiskStore::DiskStore(std::string root) : root_(std::move(root)), dir_(root_ + "/v1") {}

std::string DiskStore::entry_path(std::string_view key) const {
  return dir_ + "/" + std::string(key);
}
std::string DiskStore::lock_path(std::string_view key) const {
  return dir_ + "/" + std::string(key) + std::string(k_lock_suffix);
}

Loaded DiskStore::load(std::string_view key) const {
  Loaded out;
  const std::string path = entry_path(key);
  const std::string meta_path = path + "/" + std::string(k_meta_file);
  std::string meta_text;
  int err = 0;
  if (!fs::read_file(meta_path, meta_text, &err)) {
    // A folder without a readable meta.json is damage; no folder is a miss
    // (also when a path component is not a directory: ENOTDIR).
    std::error_code ec;
    out.status = stdfs::is_directory(path, ec) ? LoadStatus::corrupt : LoadStatus::absent;
    out.problem = "meta.json: " + fs::error_text(err);
    return out;
  }
  auto corrupt = [&](std::string why) {
    out.status = LoadStatus::corrupt;
    out.problem = std::move(why);
    out.entry = Entry{};
    return out;
  };
  try {
    out.entry.meta = nlohmann::json::parse(meta_text);
    const auto files = out.entry.meta.find("files");
    if (!out.entry.meta.is_object() || files == out.entry.meta.end() || !files->is_object())
      return corrupt("meta.json lists no files");
    for (const auto& [name, info] : files->items()) {
      // Never follow a listed name out of the entry folder.
      if (name.empty() || name == "." || name == ".." || name.find('/') != std::string::npos)
        return corrupt("meta.json lists a bad file name '" + name + "'");
      EntryFile f{name, {}};
      if (!fs::read_file(path + "/" + name, f.bytes, &err)) {
        // Renamed away by a remover while we read: a miss, not damage.
        if (err == ENOENT && !stdfs::exists(meta_path)) {
          out.status = LoadStatus::absent;
          out.entry = Entry{};
          return out;
        }
        return corrupt(name + ": " + fs::error_text(err));
      }
      out.entry.files.push_back(std::move(f));
    }
    if (std::string why = check_sealed(key, out.entry.meta, out.entry.files); !why.empty())
      return corrupt(std::move(why));
  } catch (const nlohmann::json::exception& e) {
    return corrupt(std::string("meta.json is malformed: ") + e.what());
  }
  out.status = LoadStatus::hit;
  return out;
}

PublishStatus DiskStore::publish(std::string_view key, const Entry& entry, std::string* error) {
  if (!fs::make_dirs(dir_, error)) return PublishStatus::failed;
  const std::string tmp =
      dir_ + "/" + std::string(k_tmp_prefix) + std::string(key.substr(0, 16)) + "-" + fs::unique_suffix();
  if (::mkdir(tmp.c_str(), 0755) != 0) {
    if (error) *error = "cannot create " + tmp + ": " + fs::error_text(errno);
    return PublishStatus::failed;
  }
  auto fail = [&] {
    fs::remove_tree(tmp);
    return PublishStatus::failed;
  };
  nlohmann::json meta;
  try {
    meta = sealed_meta(key, entry, fs::now_seconds());
  } catch (const std::exception& e) {
    if (error) *error = e.what();
    return fail();
  }
  for (const EntryFile& f : entry.files)
    if (!fs::write_file_synced(tmp + "/" + f.name, f.bytes, error)) return fail();
  // meta.json last: an entry folder with a meta.json is complete.
  if (!fs::write_file_synced(tmp + "/" + std::string(k_meta_file), meta.dump(2) + "\n", error)) return fail();
  if (!fs::fsync_dir(tmp, error)) return fail();
  const std::string final_path = entry_path(key);
  if (std::rename(tmp.c_str(), final_path.c_str()) != 0) {
    const int err = errno;
    fs::remove_tree(tmp);
    if (err == ENOTEMPTY || err == EEXIST) return PublishStatus::kept_existing;
    if (error) *error = "cannot rename into " + final_path + ": " + fs::error_text(err);
    return PublishStatus::failed;
  }
  // The entry is in place; a failed directory fsync only weakens durability.
  fs::fsync_dir(dir_, nullptr);
  return PublishStatus::published;
}

bool DiskStore::remove(std::string_view key) {
  const std::string trash =
      dir_ + "/" + std::string(k_trash_prefix) + std::string(key.substr(0, 16)) + "-" + fs::unique_suffix();
  if (std::rename(entry_path(key).c_str(), trash.c_str()) != 0) return false;
  fs::remove_tree(trash);
  return true;
}

bool DiskStore::touch(std::string_view key) const {
  return fs::touch(entry_path(key) + "/" + std::string(k_meta_file));
}

std::vector<EntryInfo> DiskStore::list() const {
  std::vector<EntryInfo> out;
  std::error_code ec;
  for (const auto& d : stdfs::directory_iterator(dir_, ec)) {
    const std::string name = d.path().filename().string();
    std::error_code dec;
    if (!is_key(name) || !d.is_directory(dec)) continue;
    EntryInfo info;
    info.key = name;
    const std::string meta_path = d.path().string() + "/" + std::string(k_meta_file);
    info.last_used_unix = fs::mtime_seconds(meta_path).value_or(0);
    std::string text;
    if (fs::read_file(meta_path, text)) {
      const nlohmann::json meta = nlohmann::json::parse(text, nullptr, /*allow_exceptions=*/false);
      info.summary = meta_summary(meta);
      if (meta.is_object()) info.created_unix = meta.value("created_unix", std::int64_t(0));
    } else {
      info.summary = "?";
    }
    info.bytes = folder_bytes(d.path().string());
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
  std::vector<EntryInfo> entries = list();
  std::uint64_t total = 0;
  for (const EntryInfo& e : entries) total += e.bytes;
  std::vector<EntryInfo> evicted;
  for (const EntryInfo& e : entries) {
    if (total <= max_bytes) break;
    if (e.key == keep) continue;
    // A held lock means someone is replacing this entry right now: leave it.
    std::optional<FileLock> lock = FileLock::try_acquire(lock_path(e.key));
    if (!lock) continue;
    if (remove(e.key)) {
      total -= std::min(total, e.bytes);
      evicted.push_back(e);
    }
  }
  return evicted;
}

SweepResult DiskStore::sweep_stale(std::int64_t age_seconds) {
  SweepResult r;
  const std::int64_t cutoff = fs::now_seconds() - age_seconds;
  std::error_code ec;
  std::vector<std::string> names;
  for (const auto& d : stdfs::directory_iterator(dir_, ec)) names.push_back(d.path().filename().string());
  for (const std::string& name : names) {
    const std::string path = dir_ + "/" + name;
    const bool tmp = starts_with(name, k_tmp_prefix), trash = starts_with(name, k_trash_prefix);
    if (tmp || trash) {
      const auto mtime = fs::mtime_seconds(path);
      if (!mtime || *mtime > cutoff) continue;
      fs::remove_tree(path);
      ++(tmp ? r.temp_folders : r.trash_folders);
    } else if (ends_with(name, k_lock_suffix)) {
      // Taking it proves nobody holds it; the release unlinks it safely.
      if (FileLock::try_acquire(path)) ++r.lock_files;
    }
  }
  return r;
}

int DiskStore::clear() {
  int n = 0;
  std::error_code ec;
  std::vector<std::string> keys;
  for (const auto& d : stdfs::directory_iterator(dir_, ec))
    if (is_key(d.path().filename().string())) keys.push_back(d.path().filename().string());
  for (const std::string& key : keys) n += remove(key) ? 1 : 0;
  return n;
}

}  // namespace moejit::cache
