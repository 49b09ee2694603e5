// Item 1 of issue 15: a created_unix that is a string made DiskStore::list()
// throw, so ls, verify, clear, export and stats all failed without naming a
// file, and every new compile was reported FAILED (publish -> eviction ->
// list). Now one bad field makes one entry damaged, named with the field,
// its value and what is allowed; everything else goes on.
#include <doctest/doctest.h>

#include <nlohmann/json.hpp>

#include "cache/cache.hpp"
#include "cache/sha256.hpp"
#include "hostile_util.hpp"

using namespace moejit;
using moejit::test::TempDir;

namespace {
void edit_meta(const std::string& path, const std::function<void(nlohmann::json&)>& edit) {
  nlohmann::json meta = nlohmann::json::parse(test::read_text(path));
  edit(meta);
  test::write_text(path, meta.dump(2));
}
}  // namespace

TEST_CASE("item 1: a created_unix that is a string damages one entry, not the cache") {
  TempDir scratch;
  const std::string root = scratch / "cache";
  std::vector<std::string> warnings;
  cache::Config config = test::quiet_config(root, &warnings);
  const std::string bad = cache::sha256_hex("bad"), good = cache::sha256_hex("good");
  {
    cache::Cache c(config);
    c.resolve(bad, "fake<bad>", [] { return test::fake_entry("bad", 3000); });
    c.resolve(good, "fake<good>", [] { return test::fake_entry("good", 3000); });
  }
  edit_meta(root + "/v1/" + bad + "/meta.json", [](nlohmann::json& m) { m["created_unix"] = "yesterday"; });

  cache::DiskStore disk(root);
  std::string error;
  const auto listed = disk.list(&error);
  CHECK(error.empty());
  REQUIRE(listed.size() == 2);
  const cache::Loaded l = disk.load(bad);
  CHECK(l.status == cache::LoadStatus::corrupt);
  CHECK(l.problem ==
        "meta.json: created_unix is \"yesterday\"; it must be an integer in [0, 2^62] (seconds since 1970)");
  CHECK(disk.load(good).status == cache::LoadStatus::hit);

  // A new compile publishes, then evicts to the cap, which lists: no error.
  config.max_bytes = 1;
  cache::Cache c(config);
  const std::string fresh = cache::sha256_hex("fresh");
  CHECK(c.resolve(fresh, "fake<fresh>", [] { return test::fake_entry("fresh", 3000); }).source ==
        cache::Source::compiled);
  CHECK(c.disk_writable());
  CHECK(c.counters().snapshot().evictions == 2);
  CHECK(disk.load(fresh).status == cache::LoadStatus::hit);
  CHECK(warnings.empty());
}

TEST_CASE("item 1: every cache command still works next to an entry with a bad field") {
  TempDir scratch;
  const std::string root = scratch / "cache";
  std::vector<std::string> warnings;
  const std::string bad = cache::sha256_hex("bad");
  cache::Cache(test::quiet_config(root, &warnings)).resolve(bad, "fake<bad>", [] {
    return test::fake_entry("bad", 3000);
  });
  edit_meta(root + "/v1/" + bad + "/meta.json", [](nlohmann::json& m) { m["created_unix"] = "yesterday"; });

  const test::CliResult ls = test::moejit(scratch, root, {"cache", "ls"});
  INFO(ls.output);
  CHECK(ls.exit_code == 0);
  CHECK(test::contains(ls.output, "fake<bad>"));
  const test::CliResult stats = test::moejit(scratch, root, {"cache", "stats"});
  CHECK(stats.exit_code == 0);
  CHECK(test::contains(stats.output, "entries    1 "));
  const test::CliResult verify = test::moejit(scratch, root, {"cache", "verify", "--remove"});
  INFO(verify.output);
  CHECK(verify.exit_code == 1);
  CHECK(test::contains(verify.output, "BAD  " + bad.substr(0, 16) +
                                          "  fake<bad>: meta.json: created_unix is "
                                          "\"yesterday\"; it must be an integer"));
  CHECK(test::contains(verify.output, "(removed)"));
  const test::CliResult clean = test::moejit(scratch, root, {"cache", "verify"});
  CHECK(clean.exit_code == 0);
  CHECK(test::contains(clean.output, "verified 0 entries: 0 ok, 0 bad"));
}
