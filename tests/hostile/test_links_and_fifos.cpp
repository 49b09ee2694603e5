// Items 3 and 7 of issue 15: a symbolic link planted in the cache directory
// never redirects a read or a write outside it, and a FIFO (or any file that
// is not a regular one) is damage, never a hang.
#include <doctest/doctest.h>

#include "cache/cache.hpp"
#include "cache/counters.hpp"
#include "cache/sha256.hpp"
#include "hostile_util.hpp"

using namespace moejit;
using moejit::test::TempDir;

namespace {
struct Builder {
  int calls = 0;
  cache::Entry operator()() {
    ++calls;
    return test::fake_entry("hostile", 2000);
  }
};

const std::string k_key = cache::sha256_hex("hostile");

// A cache at <scratch>/cache holding the fake entry, and a folder outside it.
struct Scene {
  TempDir scratch;
  std::string root = scratch / "cache", store = root + "/v1", outside = scratch / "outside";
  std::vector<std::string> warnings;
  Builder build;
  Scene() {
    std::filesystem::create_directories(outside);
    test::write_text(outside + "/precious.txt", "precious");
  }
  cache::Config config() { return test::quiet_config(root, &warnings); }
  cache::Resolved resolve() { return cache::Cache(config()).resolve(k_key, "fake<hostile>", std::ref(build)); }
  std::string entry_file(const std::string& name) const { return store + "/" + k_key + "/" + name; }
};
}  // namespace

TEST_CASE("item 3: a v1/stats.json link is never written through") {
  Scene s;
  std::filesystem::create_directories(s.store);
  test::make_link(s.outside + "/precious.txt", s.store + "/stats.json");
  std::string error;
  CHECK(cache::read_stats_file(s.store + "/stats.json", &error).empty());
  CHECK(test::contains(error, "stats.json is a symbolic link (not followed)"));
  CHECK(s.resolve().source == cache::Source::compiled);  // the Cache's destructor flushes the counters
  CHECK(test::read_text(s.outside + "/precious.txt") == "precious");
  // The link was replaced by the totals file, which counts this compile.
  CHECK(std::filesystem::is_regular_file(std::filesystem::symlink_status(s.store + "/stats.json")));
  CHECK(cache::read_stats_file(s.store + "/stats.json").compiles == 1);
}

TEST_CASE("item 3: a dangling <key>.lock link creates nothing outside; the lock takes its name back") {
  Scene s;
  std::filesystem::create_directories(s.store);
  test::make_link(s.outside + "/created-by-lock", s.store + "/" + k_key + ".lock");
  CHECK(s.resolve().source == cache::Source::compiled);
  CHECK_FALSE(std::filesystem::exists(s.outside + "/created-by-lock"));
  CHECK(test::names_in(s.outside) == std::vector<std::string>{"precious.txt"});
  CHECK(test::names_in(s.store) == std::vector<std::string>{k_key, "stats.json"});
  CHECK(s.warnings.empty());
}

TEST_CASE("item 3: an entry file or folder that is a link is damage: reported, removed, rebuilt, target untouched") {
  Scene s;
  s.resolve();
  SUBCASE("kernel.cubin links to a copy outside") {
    std::filesystem::copy_file(s.entry_file("kernel.cubin"), s.outside + "/kernel.cubin");
    test::make_link(s.outside + "/kernel.cubin", s.entry_file("kernel.cubin"));
    const cache::Loaded l = cache::DiskStore(s.root).load(k_key);
    CHECK(l.status == cache::LoadStatus::corrupt);
    CHECK(l.problem == "kernel.cubin is a symbolic link (not followed)");
    CHECK(std::filesystem::exists(s.outside + "/kernel.cubin"));
  }
  SUBCASE("the entry folder links to a whole entry outside") {
    std::filesystem::rename(s.store + "/" + k_key, s.outside + "/entry");
    test::make_link(s.outside + "/entry", s.store + "/" + k_key);
    const cache::Loaded l = cache::DiskStore(s.root).load(k_key);
    CHECK(l.status == cache::LoadStatus::corrupt);
    CHECK(l.problem == "the entry is a symbolic link, not a folder");
  }
  CHECK(s.resolve().source == cache::Source::compiled);
  REQUIRE(s.warnings.size() == 1);
  CHECK(test::contains(s.warnings[0], "failed verification"));
  CHECK(cache::DiskStore(s.root).load(k_key).status == cache::LoadStatus::hit);
  CHECK(test::read_text(s.outside + "/precious.txt") == "precious");
  for (const std::string& name : test::names_in(s.outside)) CHECK(name.find(".trash") == std::string::npos);
  if (std::filesystem::exists(s.outside + "/entry"))
    CHECK(test::names_in(s.outside + "/entry") ==
          std::vector<std::string>{"kernel.cubin", "meta.json", "source.cu"});  // not deleted through the link
}

TEST_CASE("item 3: a v1 that is a link is not written into: the cache degrades to memory") {
  Scene s;
  std::filesystem::create_directories(s.root);
  test::make_link(s.outside, s.store);
  CHECK(s.resolve().source == cache::Source::compiled);
  CHECK(test::names_in(s.outside) == std::vector<std::string>{"precious.txt"});
  REQUIRE(s.warnings.size() == 1);
  CHECK(test::contains(s.warnings[0], "v1 is a symbolic link (not followed), not a directory"));
  std::string error;
  cache::DiskStore(s.root).list(&error);
  CHECK(test::contains(error, "v1 is a symbolic link"));
}

TEST_CASE("item 7: a FIFO in the cache is damage, never a hang (library)") {
  Scene s;
  s.resolve();
  cache::DiskStore disk(s.root);
  SUBCASE("meta.json") {
    test::make_fifo(s.entry_file("meta.json"));
    REQUIRE(test::finishes_within(10, [&] { disk.load(k_key), disk.list(); }));
    CHECK(disk.load(k_key).problem == "meta.json is a FIFO, not a regular file");
  }
  SUBCASE("kernel.cubin") {
    test::make_fifo(s.entry_file("kernel.cubin"));
    REQUIRE(test::finishes_within(10, [&] { disk.load(k_key), disk.list(); }));
    CHECK(disk.load(k_key).problem == "kernel.cubin is a FIFO, not a regular file");
  }
  SUBCASE("stats.json and the lock") {
    test::make_fifo(s.store + "/stats.json");
    test::make_fifo(s.store + "/" + k_key + ".lock");
    std::filesystem::remove_all(s.store + "/" + k_key);
    REQUIRE(test::finishes_within(10, [&] { s.resolve(); }));
  }
  // The runtime path: a damaged entry is rebuilt, in bounded time.
  REQUIRE(test::finishes_within(10, [&] { s.resolve(); }));
  s.resolve();
  CHECK(disk.load(k_key).status == cache::LoadStatus::hit);
}

TEST_CASE("item 7: a FIFO in the cache never hangs the CLI") {
  Scene s;
  s.resolve();
  test::make_fifo(s.entry_file("kernel.cubin"));
  test::make_fifo(s.store + "/stats.json");
  for (const char* sub : {"ls", "stats", "verify"}) {
    const test::CliResult r = test::moejit(s.scratch, s.root, {"cache", sub});
    INFO(sub, ": ", r.output);
    CHECK(r.exit_code >= 0);  // not killed at the deadline
  }
  const test::CliResult verify = test::moejit(s.scratch, s.root, {"cache", "verify"});
  CHECK(verify.exit_code == 1);
  CHECK(test::contains(verify.output, "kernel.cubin is a FIFO, not a regular file"));

  // precompile meets a FIFO in the entry of a kernel it needs: reported, rebuilt, exit 0.
  const std::vector<std::string> precompile = {"precompile", "--targets", "sm_90a"};
  REQUIRE(test::moejit(s.scratch, s.root, precompile).exit_code == 0);
  for (const std::string& name : test::names_in(s.store))
    if (name.size() == 64 && name != k_key) test::make_fifo(s.store + "/" + name + "/kernel.cubin");
  const test::CliResult again = test::moejit(s.scratch, s.root, precompile);
  INFO(again.output);
  CHECK(again.exit_code == 0);
  CHECK(test::contains(again.output, "kernel.cubin is a FIFO, not a regular file; removed and rebuilding it"));
  CHECK(test::contains(again.output, "compiled          1\n"));
}
