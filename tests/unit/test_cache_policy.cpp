// The cache's policy (cache::Cache) with fake builds: hits, misses, damaged
// entries, strict mode, an unwritable directory, eviction, counters.
#include <doctest/doctest.h>

#include <csignal>
#include <thread>

#include "cache/cache.hpp"
#include "cache/file_lock.hpp"
#include "cache/fs_util.hpp"
#include "cache/memory_store.hpp"
#include "cache/sha256.hpp"
#include "cache_test_util.hpp"

using namespace moejit;
using moejit::test::TempDir;

namespace {
struct Builder {
  int calls = 0;
  std::string tag;
  cache::Entry operator()() {
    ++calls;
    return test::fake_entry(tag, 4000);
  }
};
}  // namespace

TEST_CASE("the info hook hears each compile, and only compiles") {
  TempDir tmp;
  std::vector<std::string> warnings, infos;
  cache::Config config = test::quiet_config(tmp.path(), &warnings);
  config.info = [&](const std::string& m) { infos.push_back(m); };
  const std::string key = cache::sha256_hex("info");
  Builder build{0, "info"};
  cache::Cache c(config);
  CHECK(c.resolve(key, "fake<info>", std::ref(build)).source == cache::Source::compiled);
  CHECK(c.resolve(key, "fake<info>", std::ref(build)).source == cache::Source::disk);
  REQUIRE(infos.size() == 1);
  CHECK(infos[0].rfind("compiled fake<info> in ", 0) == 0);
  CHECK(infos[0].find("(key " + key.substr(0, 16) + ")") != std::string::npos);
}

TEST_CASE("a miss builds and publishes; the next process loads it from disk") {
  TempDir tmp;
  std::vector<std::string> warnings;
  const std::string key = cache::sha256_hex("k");
  Builder build{0, "k"};
  {
    cache::Cache c(test::quiet_config(tmp.path(), &warnings));
    const cache::Resolved r = c.resolve(key, "fake<k>", std::ref(build));
    CHECK(r.source == cache::Source::compiled);
    CHECK(r.entry.meta.at("files").at("kernel.cubin").at("size") == 4000);  // sealed like a loaded one
    const cache::CounterSnapshot s = c.counters().snapshot();
    CHECK(s.misses == 1);
    CHECK(s.compiles == 1);
    CHECK(s.disk_hits == 0);
  }
  cache::Cache again(test::quiet_config(tmp.path(), &warnings));
  const cache::Resolved r = again.resolve(key, "fake<k>", std::ref(build));
  CHECK(r.source == cache::Source::disk);
  CHECK(r.entry.file("kernel.cubin")->bytes == test::fake_entry("k", 4000).file("kernel.cubin")->bytes);
  CHECK(build.calls == 1);
  CHECK(again.counters().snapshot().disk_hits == 1);
  CHECK(again.counters().snapshot().compiles == 0);
  CHECK(warnings.empty());
  // Both processes' counts are summed in stats.json (the first flushed on destruction).
  again.flush_stats();
  const cache::CounterSnapshot total = cache::read_stats_file(again.stats_path());
  CHECK(total.compiles == 1);
  CHECK(total.disk_hits == 1);
  CHECK(test::names_in(again.disk().dir()) == std::vector<std::string>{key, "stats.json"});
}

TEST_CASE("a damaged entry is reported once, removed and rebuilt") {
  TempDir tmp;
  std::vector<std::string> warnings;
  const std::string key = cache::sha256_hex("d");
  Builder build{0, "d"};
  cache::Cache(test::quiet_config(tmp.path(), &warnings)).resolve(key, "fake<d>", std::ref(build));
  test::flip_byte(tmp.path() + "/v1/" + key + "/kernel.cubin", 7);

  cache::Cache c(test::quiet_config(tmp.path(), &warnings));
  const cache::Resolved r = c.resolve(key, "fake<d>", std::ref(build));
  CHECK(r.source == cache::Source::compiled);
  CHECK(build.calls == 2);
  CHECK(c.counters().snapshot().verify_failures == 1);
  REQUIRE(warnings.size() == 1);
  CHECK(warnings[0].find(key.substr(0, 16)) != std::string::npos);
  CHECK(warnings[0].find("fake<d>") != std::string::npos);
  CHECK(warnings[0].find("kernel.cubin: SHA-256 differs") != std::string::npos);
  // The rebuilt entry verifies; a later lookup is a silent hit.
  CHECK(c.resolve(key, "fake<d>", std::ref(build)).source == cache::Source::disk);
  CHECK(warnings.size() == 1);
}

TEST_CASE("a builder killed while holding the lock, mid-publish, blocks nobody and leaves nothing behind") {
  TempDir tmp;
  std::vector<std::string> warnings;
  cache::Cache c(test::quiet_config(tmp.path(), &warnings));
  const std::string key = cache::sha256_hex("crash");
  REQUIRE(cache::fs::make_dirs(c.disk().dir(), nullptr));
  // What a crash during publish leaves: a half-written temp folder (minutes old).
  const std::string half = c.disk().dir() + "/.tmp-" + key.substr(0, 16) + "-999-dead";
  REQUIRE(cache::fs::make_dirs(half, nullptr));
  test::write_text(half + "/source.cu", "// half");
  const timespec old[2] = {{cache::fs::now_seconds() - 3600, 0}, {cache::fs::now_seconds() - 3600, 0}};
  REQUIRE(::utimensat(AT_FDCWD, half.c_str(), old, 0) == 0);

  const std::string marker = tmp / "locked";
  const pid_t child = ::fork();
  REQUIRE(child >= 0);
  if (child == 0) {
    std::optional<cache::FileLock> held = cache::FileLock::acquire(c.disk().lock_path(key), nullptr);
    test::write_text(marker, held ? "1" : "0");
    ::pause();
    ::_exit(0);
  }
  while (!std::filesystem::exists(marker) || test::read_text(marker).empty())
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  REQUIRE(test::read_text(marker) == "1");
  CHECK_FALSE(cache::FileLock::try_acquire(c.disk().lock_path(key)));  // really held
  ::kill(child, SIGKILL);
  test::wait_exit_code(child);
  CHECK(std::filesystem::exists(c.disk().lock_path(key)));  // the dead holder's file

  Builder build{0, "crash"};
  const auto t0 = std::chrono::steady_clock::now();
  CHECK(c.resolve(key, "fake", std::ref(build)).source == cache::Source::compiled);
  CHECK(std::chrono::steady_clock::now() - t0 < std::chrono::seconds(5));
  CHECK(c.counters().snapshot().lock_waits == 0);  // the kernel released it at the holder's death
  CHECK(test::names_in(c.disk().dir()) == std::vector<std::string>{key});
  CHECK(warnings.empty());
}

TEST_CASE("strict mode: a miss is an error naming the key and the kernel; a hit still loads") {
  TempDir tmp;
  std::vector<std::string> warnings;
  cache::Config config = test::quiet_config(tmp.path(), &warnings);
  config.no_jit = true;
  cache::Cache c(config);
  const std::string key = cache::sha256_hex("s");
  Builder build{0, "s"};
  try {
    c.resolve(key, "fake<s> @ sm_90a", std::ref(build));
    FAIL("no error");
  } catch (const cache::StrictMissError& e) {
    CHECK(e.key() == key);
    CHECK(std::string(e.what()).find(key) != std::string::npos);
    CHECK(std::string(e.what()).find("fake<s> @ sm_90a") != std::string::npos);
    CHECK(std::string(e.what()).find("MOEJIT_NO_JIT=1") != std::string::npos);
  }
  CHECK(build.calls == 0);
  CHECK(c.counters().snapshot().misses == 1);
  std::string error;
  REQUIRE(c.disk().publish(key, test::fake_entry("s"), &error) == cache::PublishStatus::published);
  CHECK(c.resolve(key, "fake<s>", std::ref(build)).source == cache::Source::disk);
  CHECK(build.calls == 0);
}

TEST_CASE("an unwritable cache directory costs one warning; kernels keep coming") {
  // A path under a regular file: mkdir fails with ENOTDIR even for root, where
  // a chmod 0555 directory would not stop anything.
  TempDir tmp;
  test::write_text(tmp / "file", "not a directory");
  std::vector<std::string> warnings;
  cache::Cache c(test::quiet_config(tmp / "file/cache", &warnings));
  Builder build{0, "w"};
  for (const char* k : {"w1", "w2", "w3"})
    CHECK(c.resolve(cache::sha256_hex(k), "fake", std::ref(build)).source == cache::Source::compiled);
  CHECK(build.calls == 3);
  CHECK_FALSE(c.disk_writable());
  REQUIRE(warnings.size() == 1);
  CHECK(warnings[0].find(tmp / "file/cache") != std::string::npos);
  CHECK(warnings[0].find("in memory only") != std::string::npos);
  c.flush_stats();  // must not throw either
}

TEST_CASE("publishing beyond the size cap evicts the least recently used entries") {
  TempDir tmp;
  std::vector<std::string> warnings;
  cache::Config config = test::quiet_config(tmp.path(), &warnings);
  config.max_bytes = 10000;  // room for two 4 KB entries
  cache::Cache c(config);
  Builder build{0, "e"};
  for (const char* k : {"e1", "e2", "e3"}) c.resolve(cache::sha256_hex(k), k, std::ref(build));
  CHECK(c.counters().snapshot().evictions == 1);
  CHECK(c.disk().list().size() == 2);
  CHECK(c.disk().total_bytes() <= config.max_bytes);
  CHECK(c.disk().load(cache::sha256_hex("e3")).status == cache::LoadStatus::hit);
}

TEST_CASE("the memory store builds once per key across threads, and retries after a failure") {
  cache::MemoryStore<std::string, int> store;
  std::atomic<int> makes{0};
  std::vector<std::thread> threads;
  std::atomic<int> sum{0};
  for (int i = 0; i < 8; ++i)
    threads.emplace_back([&] {
      sum += store.get_or_make("k", [&] {
        ++makes;
        std::this_thread::sleep_for(std::chrono::milliseconds(30));
        return 7;
      });
    });
  for (auto& t : threads) t.join();
  CHECK(makes == 1);
  CHECK(sum == 56);
  CHECK(store.find("k") == 7);
  CHECK_FALSE(store.find("other"));

  bool made = true;
  CHECK_THROWS(store.get_or_make("bad", []() -> int { throw std::runtime_error("boom"); }));
  CHECK(store.get_or_make(
            "bad", [] { return 1; }, &made) == 1);
  CHECK(made);
  store.get_or_make(
      "bad", [] { return 2; }, &made);
  CHECK_FALSE(made);
}

TEST_CASE("environment configuration: sizes and flags, and errors that name the variable") {
  CHECK(cache::parse_byte_size("1073741824") == std::uint64_t(1) << 30);
  CHECK(cache::parse_byte_size("512M") == std::uint64_t(512) << 20);
  CHECK(cache::parse_byte_size("2GiB") == std::uint64_t(2) << 30);
  CHECK(cache::parse_byte_size("64k") == 65536);
  CHECK(cache::parse_byte_size("0") == 0);
  CHECK_FALSE(cache::parse_byte_size("lots"));
  CHECK_FALSE(cache::parse_byte_size("1X"));
  CHECK_FALSE(cache::parse_byte_size("99999999999999T"));
  CHECK(cache::parse_flag("1") == true);
  CHECK(cache::parse_flag("") == false);
  CHECK_FALSE(cache::parse_flag("maybe"));

  TempDir tmp;
  const char* saved = std::getenv("MOEJIT_CACHE_DIR");
  const std::string saved_dir = saved ? saved : "";
  ::setenv("MOEJIT_CACHE_DIR", tmp.path().c_str(), 1);
  ::setenv("MOEJIT_CACHE_MAX_BYTES", "3M", 1);
  ::setenv("MOEJIT_NO_JIT", "1", 1);
  cache::Config c = cache::Config::from_env();
  CHECK(c.dir == tmp.path());
  CHECK(c.max_bytes == 3u << 20);
  CHECK(c.no_jit);
  ::setenv("MOEJIT_CACHE_MAX_BYTES", "huge", 1);
  CHECK_THROWS_WITH(cache::Config::from_env(), doctest::Contains("MOEJIT_CACHE_MAX_BYTES: 'huge'"));
  // A caller's setting replaces the variable, malformed or not (moejit::configure's cache_max_bytes).
  CHECK(cache::Config::from_env({.max_bytes = true}).max_bytes == cache::k_default_max_bytes);
  ::setenv("MOEJIT_NO_JIT", "maybe", 1);
  CHECK_THROWS_WITH(cache::Config::from_env({.max_bytes = true}), doctest::Contains("MOEJIT_NO_JIT: 'maybe'"));
  CHECK_FALSE(cache::Config::from_env({.max_bytes = true, .no_jit = true}).no_jit);
  ::unsetenv("MOEJIT_CACHE_MAX_BYTES");
  ::unsetenv("MOEJIT_NO_JIT");
  CHECK(cache::Config::from_env().max_bytes == cache::k_default_max_bytes);
  if (saved)
    ::setenv("MOEJIT_CACHE_DIR", saved_dir.c_str(), 1);
  else
    ::unsetenv("MOEJIT_CACHE_DIR");
}
