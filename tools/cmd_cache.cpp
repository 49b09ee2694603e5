// moejit cache: look after the kernel cache (ls, verify, clear, stats,
// export, import).
#include <fmt/format.h>

#include <unistd.h>

#include <cstring>
#include <filesystem>

#include "cache/bundle.hpp"
#include "cache/counters.hpp"
#include "cache/fs_util.hpp"
#include "cache/json_diff.hpp"
#include "codegen/compiler_identity.hpp"
#include "jit/kernel_cache.hpp"
#include "tools/cache_config.hpp"
#include "tools/cache_format.hpp"
#include "tools/cli_args.hpp"
#include "tools/commands.hpp"

namespace moejit::tools {
namespace {

// The entries, or an error when the cache directory exists but cannot be
// read (a regular file, a link, no permission): "0 entries" would be a lie.
std::vector<cache::EntryInfo> entries_of(const cache::DiskStore& disk) {
  std::string error;
  std::vector<cache::EntryInfo> entries = disk.list(&error);
  if (!error.empty()) throw std::runtime_error("cannot read the kernel cache: " + error);
  return entries;
}

int cache_ls(cache::DiskStore& disk, const cache::Config& config) {
  const auto entries = entries_of(disk);
  const std::int64_t now = cache::fs::now_seconds();
  std::uint64_t total = 0;
  if (!entries.empty()) fmt::print("{:<16}  {:>10}  {:<12}  {}\n", "KEY", "SIZE", "LAST USE", "KERNEL");
  // Most recently used first.
  for (auto it = entries.rbegin(); it != entries.rend(); ++it) {
    fmt::print("{:<16}  {:>10}  {:<12}  {}\n", it->key.substr(0, 16), format_bytes(it->bytes),
               format_age(now - it->last_used_unix), it->summary);
    total += it->bytes;
  }
  fmt::print("{} entries, {} (cap {}) in {}\n", entries.size(), format_bytes(total),
             config.max_bytes ? format_bytes(config.max_bytes) : "none", disk.dir());
  return 0;
}

int cache_verify(cache::DiskStore& disk, bool remove_bad) {
  int ok = 0, bad = 0, stale = 0;
  for (const cache::EntryInfo& e : entries_of(disk)) {
    const cache::Loaded l = disk.load(e.key);
    if (l.status == cache::LoadStatus::absent) continue;  // removed while we listed
    if (l.status == cache::LoadStatus::hit) {
      ++ok;
      continue;
    }
    // A stale entry is whole but never loaded by this moejit: news, not an error.
    const bool is_stale = l.status == cache::LoadStatus::stale;
    ++(is_stale ? stale : bad);
    std::string removed;
    if (remove_bad) {
      std::string why;
      bool absent = false;
      removed = disk.remove(e.key, &why, &absent) ? " (removed)"
                : absent                          ? " (already removed by another process)"
                                                  : " (not removed: " + why + ")";
    }
    fmt::print("{}  {}  {}: {}{}\n", is_stale ? "STALE" : "BAD", e.key.substr(0, 16), e.summary, l.problem, removed);
  }
  const cache::SweepResult swept = disk.sweep_stale();
  if (swept.temp_folders || swept.trash_folders || swept.lock_files)
    fmt::print("removed leftovers of crashed processes: {} temp folders, {} trash folders, {} lock files\n",
               swept.temp_folders, swept.trash_folders, swept.lock_files);
  fmt::print("verified {} entries: {} ok, {} bad{}\n", ok + bad + stale, ok, bad,
             stale ? fmt::format(", {} stale (left by another moejit or toolkit; never loaded)", stale) : "");
  return bad ? 1 : 0;
}

int cache_clear(cache::Cache& store) {
  cache::DiskStore& disk = store.disk();
  const auto entries = entries_of(disk);
  std::uint64_t bytes = 0;
  int removed = 0;
  std::vector<std::string> failures;
  for (const cache::EntryInfo& e : entries) {
    std::string why;
    bool absent = false;
    if (disk.remove(e.key, &why, &absent))
      ++removed, bytes += e.bytes;
    else if (!absent)  // gone already (another clear, an eviction): the cache is as asked
      failures.push_back(why);
  }
  disk.sweep_stale();
  if (const cache::fs::Dir dir = disk.open(false, nullptr)) ::unlinkat(dir.fd(), cache::k_stats_file.data(), 0);
  fmt::print("removed {} entries ({}) from {}\n", removed, format_bytes(bytes), disk.dir());
  if (!failures.empty())
    throw std::runtime_error(fmt::format("could not remove {} of {} entries from {}: {}", failures.size(),
                                         entries.size(), disk.dir(), failures.front()));
  return 0;
}

int cache_stats(cache::Cache& store, const cache::Config& config) {
  std::uint64_t bytes = 0;
  const auto entries = entries_of(store.disk());
  for (const auto& e : entries) bytes += e.bytes;
  fmt::print("cache dir  {}\n", store.disk().dir());
  fmt::print("entries    {} ({} of a {} cap)\n", entries.size(), format_bytes(bytes),
             config.max_bytes ? format_bytes(config.max_bytes) : "unlimited");
  std::string error;
  const cache::CounterSnapshot totals = cache::read_stats_file(store.stats_path(), &error);
  if (!error.empty()) throw std::runtime_error("the totals cannot be read: " + error);
  fmt::print("totals over every process since the last clear:\n{}", format_counters_table(totals));
  return 0;
}

int cache_export(cache::DiskStore& disk, const std::string& file) {
  std::vector<cache::BundleEntry> entries;
  std::uint64_t bytes = 0;
  int damaged = 0;
  for (const cache::EntryInfo& e : entries_of(disk)) {
    cache::Loaded l = disk.load(e.key);
    if (l.status != cache::LoadStatus::hit) {
      if (l.status != cache::LoadStatus::absent)
        fmt::print(stderr, "moejit cache export: skipping {} entry {} ({}): {}\n",
                   l.status == cache::LoadStatus::stale ? "stale" : "damaged", e.key.substr(0, 16), e.summary,
                   l.problem);
      damaged += l.status != cache::LoadStatus::absent && l.status != cache::LoadStatus::stale;
      continue;
    }
    bytes += l.entry.bytes();
    entries.push_back({e.key, std::move(l.entry)});
  }
  cache::write_bundle(file, entries);
  fmt::print("exported {} entries ({}) to {}\n", entries.size(), format_bytes(bytes), file);
  // As verify: a stale entry is another moejit's or toolkit's and only listed; a damaged one is a kernel the
  // bundle was asked for and lacks.
  if (damaged == 0) return 0;
  fmt::print(stderr,
             "moejit cache export: {} damaged entries were left out of the bundle (moejit cache verify --remove "
             "deletes them; the next use rebuilds them)\n",
             damaged);
  return 1;
}

std::string entry_name(const std::string& key, const nlohmann::json& meta) {
  return fmt::format("entry {} ({})", key.substr(0, 16), cache::meta_summary(meta));
}

// Refuses the whole bundle before writing anything if one entry was built by
// another toolkit, or keys differently here (other templates or passes): from
// the manifest's meta.json, before its files are read.
void check_importable(const std::string& file, const std::string& key, const nlohmann::json& meta) {
  const std::string who = entry_name(key, meta);
  codegen::KernelSpec spec;
  try {
    spec = jit::read_meta_spec(meta);
  } catch (const std::exception& ex) {
    throw std::runtime_error(fmt::format("refusing {}: {} has no valid spec: {}", file, who, ex.what()));
  }
  const nlohmann::json local = codegen::compiler_identity(spec.target);
  const nlohmann::json theirs = meta.value("identity", nlohmann::json());
  if (auto d = cache::first_difference(theirs, local))
    throw std::runtime_error(fmt::format(
        "refusing {}: {} was built by another toolkit: compiler identity field '{}' is {} in the bundle but {} here",
        file, who, d->path, d->left, d->right));
  if (const std::string here = jit::cache_key(spec); here != key)
    throw std::runtime_error(fmt::format(
        "refusing {}: {} has key {} but this moejit keys its spec as {} (different templates or PTX pass pipeline)",
        file, who, key.substr(0, 16), here.substr(0, 16)));
}

// What every load will require, once an entry's files are read and verified: one that passes its checksums but
// could never be loaded (no files, no resources...) is refused here, not later.
void check_loadable(const std::string& file, const cache::BundleEntry& e) {
  if (const cache::EntryVerdict v = jit::check_kernel_entry(e.key, e.entry); !v.problem.empty())
    throw std::runtime_error(fmt::format("refusing {}: {}: {}", file, entry_name(e.key, e.entry.meta), v.problem));
}

// All or nothing: every entry's toolkit and key are checked from the manifest,
// then each entry is read, verified and written into a temp folder in turn (one
// entry's files in memory at a time, whatever the bundle's size: a payload
// damaged in entry n is found after entries 0..n-1 were written, and they are
// dropped), and only once all are staged are they renamed into place; a
// failure at any step leaves the cache's entries as they were (an entry it
// held damaged stays replaced).
int cache_import(cache::DiskStore& disk, const cache::Config& config, const std::string& file) {
  // The entries take at least the bundle's payload: a file over the cap is refused before it is opened.
  std::error_code size_error;
  const std::uint64_t file_bytes = std::filesystem::file_size(file, size_error);
  if (!size_error && config.max_bytes && file_bytes > config.max_bytes + cache::k_max_manifest_bytes + 4096)
    throw std::runtime_error(fmt::format(
        "refusing {}: the bundle is {}, more than the cache's cap MOEJIT_CACHE_MAX_BYTES = {}; raise the cap", file,
        format_bytes(file_bytes), format_bytes(config.max_bytes)));
  // The manifest is checked before any payload is read, and every entry's toolkit and key from it.
  const cache::BundleReader bundle(file);
  std::uint64_t bytes = 0;
  for (size_t i = 0; i < bundle.size(); ++i) {
    check_importable(file, bundle.key(i), bundle.meta(i));
    bytes += bundle.bytes(i);
  }
  if (config.max_bytes && bytes > config.max_bytes)
    throw std::runtime_error(fmt::format(
        "refusing {}: its {} entries take {}, more than the cache's cap MOEJIT_CACHE_MAX_BYTES = {}; raise the cap",
        file, bundle.size(), format_bytes(bytes), format_bytes(config.max_bytes)));

  std::vector<cache::DiskStore::Staged> staged;
  std::vector<std::string> keys, committed;
  size_t consumed = 0;  // staged entries their commit has renamed into place or dropped
  int present = 0;
  // Another process's sweep deletes temp folders k_stale_seconds old: the ones staged first are refreshed while
  // the rest are written (a bundle of many GB on a slow disk), and once more before they are committed.
  std::int64_t refreshed = cache::fs::now_seconds();
  auto keep_staged = [&](bool now) {
    if (!now && cache::fs::now_seconds() - refreshed < cache::k_stale_seconds / 5) return;
    disk.keep_staged(staged);
    refreshed = cache::fs::now_seconds();
  };
  auto failed = [&](const std::string& why) {
    return std::runtime_error(
        fmt::format("import of {} into {} failed: {}; nothing was imported", file, disk.dir(), why));
  };
  try {
    for (size_t i = 0; i < bundle.size(); ++i) {
      keep_staged(false);
      const cache::BundleEntry e = bundle.read(i);  // its files verified; a damaged one ends the import here
      check_loadable(file, e);
      keys.push_back(e.key);
      if (disk.load(e.key).status == cache::LoadStatus::hit) {
        ++present;
        continue;
      }
      std::string error;
      std::optional<cache::DiskStore::Staged> s = disk.stage(e.key, e.entry, &error);
      if (!s) throw failed(error);
      staged.push_back(std::move(*s));
    }
    keep_staged(true);
    for (; consumed < staged.size(); ++consumed) {
      const cache::DiskStore::Staged& s = staged[consumed];
      disk.remove(s.key);  // a damaged or stale entry under this key
      std::string error;
      const cache::PublishStatus status = disk.commit(s, &error);
      if (status == cache::PublishStatus::published) committed.push_back(s.key);
      if (status == cache::PublishStatus::kept_existing) ++present;     // a concurrent writer got there first
      if (status == cache::PublishStatus::failed) throw failed(error);  // (discarded below if still there)
    }
  } catch (...) {
    // Whatever ended it (a damaged entry, a full disk, an allocation): nothing staged or published stays.
    for (size_t i = consumed; i < staged.size(); ++i) disk.discard(staged[i]);
    for (const std::string& key : committed) disk.remove(key);
    throw;
  }
  const size_t evicted = config.max_bytes ? disk.evict_to(config.max_bytes, keys).size() : 0;
  fmt::print(
      "imported {} entries from {} ({} new, {} already present{}); checksums, compiler identity and key binding "
      "verified\n",
      bundle.size(), file, committed.size(), present,
      evicted ? fmt::format(", {} older entries evicted to stay under the cap", evicted) : "");
  return 0;
}

}  // namespace

int cmd_cache(int argc, char** argv) {
  const std::vector<OptionSpec> options = {
      {"remove", false, "verify: also delete the bad entries"},
      {"help", false, "this text"},
  };
  Args args(options, argc, argv, 2);
  const auto& pos = args.positional();
  if (args.has("help") || pos.empty()) {
    fmt::print(
        "usage: moejit cache <ls | verify [--remove] | clear | stats | export FILE | import FILE>\n\n"
        "  ls           entries: key, size, last use, kernel\n"
        "  verify       check every entry as a load does (checksums, loadable, bound to its key);\n"
        "               exit 1 if any is bad; stale ones (another moejit or toolkit) are only listed\n"
        "  clear        delete every entry; exit 1 if one could not be deleted\n"
        "  stats        entries, size, and the counters summed over every process\n"
        "  export FILE  write every entry that loads into one relocatable bundle with checksums; exit 1\n"
        "               if a damaged one was left out (stale ones are only listed, as by verify)\n"
        "  import FILE  verify a bundle and add all of its entries or none; refused if it was built by\n"
        "               another toolkit or does not fit MOEJIT_CACHE_MAX_BYTES (bundles are unsigned:\n"
        "               import only from whom you would let write your cache; README: Trust model)\n\n"
        "The cache lives in $MOEJIT_CACHE_DIR, else $XDG_CACHE_HOME/moejit, else ~/.cache/moejit;\n"
        "MOEJIT_CACHE_MAX_BYTES caps its size (default 1G, LRU eviction).\n\noptions:\n{}",
        format_options(options));
    return pos.empty() && !args.has("help") ? 2 : 0;
  }
  const std::string& sub = pos[0];
  const size_t want = (sub == "export" || sub == "import") ? 2 : 1;
  if (pos.size() != want)
    throw UsageError(want == 2 ? fmt::format("cache {} needs one FILE", sub)
                               : fmt::format("cache {}: unexpected argument '{}'", sub, excerpt(pos.back())));
  if (args.has("remove") && sub != "verify") throw UsageError("--remove applies to `cache verify` only");

  cache::Config config = disk_cache_config();
  config.check = jit::check_kernel_entry;
  cache::Cache store(config);
  if (sub == "ls") return cache_ls(store.disk(), config);
  if (sub == "verify") return cache_verify(store.disk(), args.has("remove"));
  if (sub == "clear") return cache_clear(store);
  if (sub == "stats") return cache_stats(store, config);
  if (sub == "export") return cache_export(store.disk(), pos[1]);
  if (sub == "import") return cache_import(store.disk(), config, pos[1]);
  throw UsageError(fmt::format("unknown cache command '{}' (ls, verify, clear, stats, export, import)", excerpt(sub)));
}

}  // namespace moejit::tools
