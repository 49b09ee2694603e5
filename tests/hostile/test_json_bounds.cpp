// Item 4 of issue 15: deeply nested JSON crashed moejit with a stack overflow
// in the recursive dump (in `cache import` of a bundle whose meta.json held a
// `junk` field 100k deep, leaving a .tmp-* folder), and 20k deep made an
// 800 MB meta.json out of a 219 KB bundle. JSON from disk or a bundle is now
// refused past 16 levels (manifests: 19) before anything prints or copies it.
#include <doctest/doctest.h>

#include <nlohmann/json.hpp>

#include "cache/bounded_json.hpp"
#include "cache/bundle.hpp"
#include "cache/disk_store.hpp"
#include "cache/sha256.hpp"
#include "hostile_util.hpp"

using namespace moejit;
using moejit::test::TempDir;

namespace {
// A valid bundle of two fake entries whose first meta.json gets `"junk": <junk>`.
std::string bundle_with_junk(const std::string& junk) {
  TempDir tmp;
  std::vector<cache::BundleEntry> entries;
  for (const char* tag : {"one", "two"}) {
    const std::string key = cache::sha256_hex(tag);
    cache::Entry e = test::fake_entry(tag, 3000);
    e.meta = cache::sealed_meta(key, e, 1700000000);
    entries.push_back({key, std::move(e)});
  }
  cache::write_bundle(tmp / "b", entries);
  test::BundleParts parts = test::split_bundle(test::read_text(tmp / "b"));
  const size_t meta = parts.manifest.find("\"meta\":{") + 8;
  parts.manifest.insert(meta, "\"junk\":" + junk + ",");
  return test::rebundle(parts);
}
}  // namespace

TEST_CASE("item 4: the parser refuses depth, size and repeated keys with short messages") {
  const cache::JsonLimits limits{1 << 20, 16};
  CHECK(cache::parse_json(test::deep_array(16), limits).is_array());
  CHECK_THROWS_WITH_AS(cache::parse_json(test::deep_array(17), limits), "nested deeper than 16 levels",
                       cache::JsonInputError);
  CHECK_THROWS_WITH_AS(cache::parse_json(test::deep_array(100000), limits), "nested deeper than 16 levels",
                       cache::JsonInputError);
  CHECK_THROWS_WITH_AS(cache::parse_json(R"({"a": 1, "b": {"a": 2, "a": 3}})", limits), "the key \"a\" appears twice",
                       cache::JsonInputError);
  CHECK_THROWS_WITH_AS(cache::parse_json(std::string(100, ' '), {50, 16}), "100 bytes, over the limit of 50",
                       cache::JsonInputError);
  // A parse error quotes at most a short, escaped excerpt.
  std::string unterminated(1 << 20, 'x');
  unterminated.front() = '"';
  unterminated += '\x1b';
  try {
    (void)cache::parse_json(unterminated, {2 << 20, 16});
    FAIL("no error");
  } catch (const cache::JsonInputError& e) {
    CHECK(std::string(e.what()).size() < 300);
    CHECK(std::string(e.what()).find('\x1b') == std::string::npos);
  }
  nlohmann::json deep = nlohmann::json::array();
  for (int i = 0; i < 20; ++i) deep = nlohmann::json::array({deep});
  CHECK(cache::nests_deeper_than(deep, 16));
  CHECK_FALSE(cache::nests_deeper_than(deep, 21));
}

TEST_CASE("item 4: a meta.json nested 100k deep is a damaged entry, not a crash") {
  TempDir scratch;
  cache::DiskStore disk(scratch / "cache");
  const std::string key = cache::sha256_hex("deep");
  std::string error;
  REQUIRE(disk.publish(key, test::fake_entry("deep"), &error) == cache::PublishStatus::published);
  const std::string meta = disk.entry_path(key) + "/meta.json";
  std::string text = test::read_text(meta);
  text.insert(1, "\"junk\": " + test::deep_array(100000) + ",");
  test::write_text(meta, text);
  const cache::Loaded l = disk.load(key);
  CHECK(l.status == cache::LoadStatus::corrupt);
  CHECK(l.problem == "meta.json: nested deeper than 16 levels");
  CHECK(disk.list().size() == 1);
}

TEST_CASE("item 4: cache import of a bundle with a junk field 100k or 20k deep: rc 1, nothing written") {
  TempDir scratch;
  for (const size_t depth : {size_t(100000), size_t(20000)}) {
    CAPTURE(depth);
    const std::string bundle = scratch / ("deep-" + std::to_string(depth) + ".moejit");
    test::write_text(bundle, bundle_with_junk(test::deep_array(depth)));
    CHECK_THROWS_WITH_AS(cache::read_bundle(bundle), doctest::Contains("malformed manifest: nested deeper than 19"),
                         cache::BundleError);
    const std::string root = scratch / ("cache-" + std::to_string(depth));
    const test::CliResult r = test::moejit(scratch, root, {"cache", "import", bundle});
    INFO(r.output);
    CHECK(r.exit_code == 1);
    CHECK(test::contains(r.output, "malformed manifest: nested deeper than 19 levels"));
    CHECK_FALSE(std::filesystem::exists(root + "/v1"));  // no .tmp-* folder, no entry
  }
}
