// The disk store and the per-key lock, without a compiler: entries are fake.
#include <doctest/doctest.h>
#include <sys/stat.h>

#include <atomic>
#include <chrono>
#include <thread>

#include "cache/disk_store.hpp"
#include "cache/file_lock.hpp"
#include "cache/fs_util.hpp"
#include "cache/key.hpp"
#include "cache/sha256.hpp"
#include "cache_test_util.hpp"

using namespace moejit;
using moejit::test::TempDir;

namespace {
std::string key_of(const std::string& tag) {
  return cache::sha256_hex(tag);
}

void set_mtime(const std::string& path, std::int64_t unix_seconds) {
  const timespec times[2] = {{unix_seconds, 0}, {unix_seconds, 0}};
  REQUIRE(::utimensat(AT_FDCWD, path.c_str(), times, 0) == 0);
}
}  // namespace

TEST_CASE("publish then load returns the same files, with sizes and SHA-256 in meta.json") {
  TempDir tmp;
  cache::DiskStore disk(tmp.path());
  const std::string key = key_of("a");
  const cache::Entry entry = test::fake_entry("a");
  CHECK(disk.load(key).status == cache::LoadStatus::absent);
  std::string error;
  REQUIRE(disk.publish(key, entry, &error) == cache::PublishStatus::published);
  const cache::Loaded l = disk.load(key);
  REQUIRE(l.status == cache::LoadStatus::hit);
  REQUIRE(l.entry.files.size() == 2);
  CHECK(l.entry.file("kernel.cubin")->bytes == entry.file("kernel.cubin")->bytes);
  CHECK(l.entry.file("source.cu")->bytes == entry.file("source.cu")->bytes);
  CHECK(l.entry.meta.at("summary") == "fake<a>");
  CHECK(l.entry.meta.at("key") == key);
  CHECK(l.entry.meta.at("files").at("kernel.cubin").at("size") == 1000);
  CHECK(l.entry.meta.at("files").at("kernel.cubin").at("sha256") == cache::sha256_hex(std::string(1000, '\1')));
  // Only the entry: no temp folder, no lock file.
  CHECK(test::names_in(disk.dir()) == std::vector<std::string>{key});
}

TEST_CASE("the loser of a publish race keeps the winner's entry and leaves nothing behind") {
  TempDir tmp;
  cache::DiskStore disk(tmp.path());
  const std::string key = key_of("race");
  std::string error;
  REQUIRE(disk.publish(key, test::fake_entry("winner"), &error) == cache::PublishStatus::published);
  CHECK(disk.publish(key, test::fake_entry("loser!"), &error) == cache::PublishStatus::kept_existing);
  const cache::Loaded l = disk.load(key);
  REQUIRE(l.status == cache::LoadStatus::hit);
  CHECK(l.entry.meta.at("summary") == "fake<winner>");
  CHECK(test::names_in(disk.dir()) == std::vector<std::string>{key});
}

TEST_CASE("a damaged entry loads as corrupt, naming what disagrees") {
  TempDir tmp;
  cache::DiskStore disk(tmp.path());
  const std::string key = key_of("d");
  std::string error;
  REQUIRE(disk.publish(key, test::fake_entry("d"), &error) == cache::PublishStatus::published);
  const std::string cubin = disk.entry_path(key) + "/kernel.cubin";

  SUBCASE("a flipped byte") {
    test::flip_byte(cubin, 500);
    const cache::Loaded l = disk.load(key);
    CHECK(l.status == cache::LoadStatus::corrupt);
    CHECK(l.problem == "kernel.cubin: SHA-256 differs from meta.json");
  }
  SUBCASE("a truncated file") {
    test::write_text(cubin, "short");
    CHECK(disk.load(key).problem == "kernel.cubin: size differs from meta.json");
  }
  SUBCASE("a missing file") {
    std::filesystem::remove(cubin);
    const cache::Loaded l = disk.load(key);
    CHECK(l.status == cache::LoadStatus::corrupt);
    CHECK(l.problem.find("kernel.cubin") != std::string::npos);
  }
  SUBCASE("a meta.json that is not JSON") {
    test::write_text(disk.entry_path(key) + "/meta.json", "{not json");
    CHECK(disk.load(key).status == cache::LoadStatus::corrupt);
  }
  SUBCASE("a meta.json that lists a file outside the entry") {
    const std::string meta_path = disk.entry_path(key) + "/meta.json";
    nlohmann::json meta = nlohmann::json::parse(test::read_text(meta_path));
    meta["files"]["../outside"] = meta["files"]["source.cu"];
    test::write_text(meta_path, meta.dump());
    CHECK(disk.load(key).problem == "meta.json lists a bad file name \"../outside\"");
  }
  SUBCASE("a folder without meta.json") {
    std::filesystem::remove(disk.entry_path(key) + "/meta.json");
    CHECK(disk.load(key).status == cache::LoadStatus::corrupt);
  }
  SUBCASE("an entry copied under another key") {
    const std::string other = key_of("other");
    std::filesystem::rename(disk.entry_path(key), disk.entry_path(other));
    CHECK(disk.load(other).problem == "meta.json names another key");
  }
  CHECK(disk.remove(key) + disk.remove(key_of("other")) == 1);
  // A second remove finds nothing: false, and `absent` tells it from a failure (a clear racing an eviction).
  bool absent = false;
  CHECK_FALSE(disk.remove(key, nullptr, &absent));
  CHECK(absent);
  CHECK_FALSE(disk.remove(key_of("other"), nullptr, &absent));
  CHECK(absent);
  CHECK(disk.load(key).status == cache::LoadStatus::absent);
  CHECK(test::names_in(disk.dir()).empty());
}

TEST_CASE("the lock file exists only while held, and excludes other holders") {
  TempDir tmp;
  const std::string path = tmp / "k.lock";
  std::string error;
  {
    std::optional<cache::FileLock> held = cache::FileLock::acquire(path, &error);
    REQUIRE(held);
    CHECK_FALSE(held->waited());
    CHECK(std::filesystem::exists(path));
    CHECK_FALSE(cache::FileLock::try_acquire(path));  // another open file description
  }
  CHECK_FALSE(std::filesystem::exists(path));
}

TEST_CASE("a waiter that wakes on an unlinked lock file retries and holds a live one") {
  TempDir tmp;
  const std::string path = tmp / "k.lock";
  std::string error;
  std::optional<cache::FileLock> first = cache::FileLock::acquire(path, &error);
  REQUIRE(first);
  std::atomic<int> phase{0};
  bool waited = false, path_existed = false, exclusive = false;
  std::thread waiter([&] {
    phase = 1;
    std::optional<cache::FileLock> second = cache::FileLock::acquire(path, nullptr);
    waited = second && second->waited();
    path_existed = std::filesystem::exists(path);
    // Nobody else may hold it now, although the first holder's file was unlinked.
    exclusive = !cache::FileLock::try_acquire(path);
    phase = 2;
  });
  while (phase < 1) std::this_thread::yield();
  std::this_thread::sleep_for(std::chrono::milliseconds(50));
  CHECK(phase == 1);  // still waiting
  first.reset();      // unlinks the file the waiter opened
  waiter.join();
  CHECK(waited);
  CHECK(path_existed);
  CHECK(exclusive);
  CHECK_FALSE(std::filesystem::exists(path));
}

TEST_CASE("sweep_stale removes what crashed processes left, and nothing live") {
  TempDir tmp;
  cache::DiskStore disk(tmp.path());
  REQUIRE(cache::fs::make_dirs(disk.dir(), nullptr));
  const std::int64_t old = cache::fs::now_seconds() - 3600;
  for (const char* name : {".tmp-dead-1", ".trash-dead-2", ".tmp-live-3"}) {
    REQUIRE(cache::fs::make_dirs(disk.dir() + "/" + name + "/sub", nullptr));
    test::write_text(disk.dir() + "/" + name + "/sub/f", "x");
  }
  set_mtime(disk.dir() + "/.tmp-dead-1", old);
  set_mtime(disk.dir() + "/.trash-dead-2", old);
  test::write_text(disk.dir() + "/" + key_of("crashed") + ".lock", "");  // its holder died: flock is gone
  std::string error;
  std::optional<cache::FileLock> live = cache::FileLock::acquire(disk.lock_path(key_of("live")), &error);
  REQUIRE(live);

  const cache::SweepResult r = disk.sweep_stale();
  CHECK(r.temp_folders == 1);
  CHECK(r.trash_folders == 1);
  CHECK(r.lock_files == 1);
  CHECK(test::names_in(disk.dir()) == std::vector<std::string>{".tmp-live-3", key_of("live") + ".lock"});
}

TEST_CASE("keep_staged: a folder staged long ago survives another process's sweep until it is committed") {
  TempDir tmp;
  cache::DiskStore disk(tmp.path());
  std::string error;
  std::vector<cache::DiskStore::Staged> staged;
  for (const std::string tag : {"s0", "s1"}) {
    std::optional<cache::DiskStore::Staged> s = disk.stage(key_of(tag), test::fake_entry(tag, 1000), &error);
    REQUIRE(s);
    staged.push_back(std::move(*s));
  }
  const std::int64_t old = cache::fs::now_seconds() - 2 * cache::k_stale_seconds;
  for (const auto& s : staged) set_mtime(disk.dir() + "/" + s.folder, old);
  disk.keep_staged({staged[0]});
  CHECK(disk.sweep_stale().temp_folders == 1);  // the one not kept: what an import lost before keep_staged
  CHECK(disk.commit(staged[0], &error) == cache::PublishStatus::published);
  CHECK(disk.load(key_of("s0")).status == cache::LoadStatus::hit);
  CHECK(disk.commit(staged[1], &error) == cache::PublishStatus::failed);
}

// Run by the ctest cache_evicts_without_flock, with a preloaded flock that answers ENOLCK (no_flock_preload.cpp).
TEST_CASE("without flock: entries still publish, and evict_to still holds the cap" * doctest::skip()) {
  TempDir tmp;
  cache::DiskStore disk(tmp.path());
  std::string error;
  bool unsupported = false;
  REQUIRE_FALSE(cache::FileLock::acquire(tmp.path() + "/probe.lock", &error, &unsupported));
  REQUIRE(unsupported);  // the preload is in effect: this case tests nothing without it
  std::vector<std::string> keys;
  for (const std::string tag : {"n0", "n1", "n2"}) {
    keys.push_back(key_of(tag));
    REQUIRE(disk.publish(keys.back(), test::fake_entry(tag, 10000), &error) == cache::PublishStatus::published);
  }
  const std::uint64_t one = disk.list().front().bytes;
  CHECK(disk.evict_to(one, keys[2]).size() == 2);  // every lock attempt fails as unsupported: not "held"
  CHECK(disk.list().size() == 1);
  CHECK(disk.load(keys[2]).status == cache::LoadStatus::hit);
}

TEST_CASE("evict_to deletes least-recently-used entries down to the cap") {
  TempDir tmp;
  cache::DiskStore disk(tmp.path());
  std::string error;
  const std::int64_t now = cache::fs::now_seconds();
  std::vector<std::string> keys;
  for (const std::string tag : {"e0", "e1", "e2", "e3"}) {
    const size_t i = keys.size();
    keys.push_back(key_of(tag));
    REQUIRE(disk.publish(keys[i], test::fake_entry(tag, 10000), &error) == cache::PublishStatus::published);
    set_mtime(disk.entry_path(keys[i]) + "/meta.json", now - 1000 + std::int64_t(i));  // e0 oldest
  }
  REQUIRE(disk.touch(keys[0]));  // a hit: e0 becomes the newest
  const std::uint64_t one = disk.list().front().bytes;
  CHECK(disk.total_bytes() == 4 * one);

  // Room for two: e1 and e2 go; e3 and the touched e0 stay.
  const auto evicted = disk.evict_to(2 * one, "");
  REQUIRE(evicted.size() == 2);
  CHECK(evicted[0].key == keys[1]);
  CHECK(evicted[1].key == keys[2]);
  CHECK(disk.load(keys[0]).status == cache::LoadStatus::hit);
  CHECK(disk.load(keys[3]).status == cache::LoadStatus::hit);

  // `keep` survives even when it is the oldest, and a locked key is skipped.
  set_mtime(disk.entry_path(keys[3]) + "/meta.json", now - 5000);
  std::optional<cache::FileLock> busy = cache::FileLock::acquire(disk.lock_path(keys[0]), &error);
  CHECK(disk.evict_to(0, keys[3]).empty());
  busy.reset();
  CHECK(disk.evict_to(0, keys[3]).size() == 1);
  CHECK(disk.list().size() == 1);
  CHECK(disk.clear() == 1);
  CHECK(test::names_in(disk.dir()).empty());
}
