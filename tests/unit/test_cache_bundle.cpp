// Export bundles: round trip, and every kind of damage is refused by name.
#include <doctest/doctest.h>

#include "cache/bundle.hpp"
#include "cache/disk_store.hpp"
#include "cache/json_diff.hpp"
#include "cache/sha256.hpp"
#include "cache_test_util.hpp"

using namespace moejit;
using moejit::test::TempDir;

namespace {
std::vector<cache::BundleEntry> sample_entries() {
  std::vector<cache::BundleEntry> out;
  for (const char* tag : {"one", "two"}) {
    const std::string key = cache::sha256_hex(tag);
    cache::Entry e = test::fake_entry(tag, 3000);
    e.meta = cache::sealed_meta(key, e, 1700000000);
    out.push_back({key, std::move(e)});
  }
  return out;
}
}  // namespace

TEST_CASE("a bundle round-trips every entry, and its entries publish anywhere") {
  TempDir tmp;
  const auto entries = sample_entries();
  cache::write_bundle(tmp / "b.moejit", entries);
  CHECK(test::names_in(tmp.path()) == std::vector<std::string>{"b.moejit"});  // no temp file left
  const auto back = cache::read_bundle(tmp / "b.moejit");
  REQUIRE(back.size() == 2);
  for (size_t i = 0; i < 2; ++i) {
    CHECK(back[i].key == entries[i].key);
    CHECK(back[i].entry.files == entries[i].entry.files);
    CHECK(back[i].entry.meta == entries[i].entry.meta);
  }
  cache::DiskStore elsewhere(tmp / "other-machine");
  std::string error;
  for (const auto& e : back) REQUIRE(elsewhere.publish(e.key, e.entry, &error) == cache::PublishStatus::published);
  CHECK(elsewhere.load(back[1].key).status == cache::LoadStatus::hit);
}

TEST_CASE("a damaged bundle is refused, naming what failed") {
  TempDir tmp;
  const std::string path = tmp / "b.moejit";
  auto entries = sample_entries();
  cache::write_bundle(path, entries);
  const std::string good = test::read_text(path);

  SUBCASE("a payload byte") {
    test::flip_byte(path, good.size() - 10);  // inside entry two's cubin
    CHECK_THROWS_WITH_AS(
        cache::read_bundle(path),
        doctest::Contains(("entry " + entries[1].key.substr(0, 16) + ": kernel.cubin fails its SHA-256").c_str()),
        cache::BundleError);
  }
  SUBCASE("a payload byte, found when that entry is read: an importer holds one entry's files at a time") {
    test::flip_byte(path, good.size() - 10);  // inside entry two's cubin
    const cache::BundleReader reader(path);   // the header and manifest are whole
    REQUIRE(reader.size() == entries.size());
    CHECK(reader.key(1) == entries[1].key);
    CHECK(reader.meta(1) == entries[1].entry.meta);
    CHECK(reader.bytes(1) == entries[1].entry.bytes() + entries[1].entry.meta.dump(2).size());
    const cache::BundleEntry first = reader.read(0);
    CHECK(first.key == entries[0].key);
    CHECK(first.entry.bytes() == entries[0].entry.bytes());
    CHECK_THROWS_WITH_AS(reader.read(1), doctest::Contains("kernel.cubin fails its SHA-256"), cache::BundleError);
  }
  SUBCASE("a manifest byte") {
    test::flip_byte(path, good.find("\"entries\"") + 2);
    CHECK_THROWS_WITH_AS(cache::read_bundle(path), doctest::Contains("manifest's SHA-256"), cache::BundleError);
  }
  SUBCASE("a truncated payload") {
    test::write_text(path, good.substr(0, good.size() - 100));
    CHECK_THROWS_WITH_AS(cache::read_bundle(path), doctest::Contains("truncated payload"), cache::BundleError);
  }
  SUBCASE("not a bundle") {
    test::write_text(path, "hello");
    CHECK_THROWS_WITH_AS(cache::read_bundle(path), doctest::Contains("not a moejit cache bundle"), cache::BundleError);
  }
  SUBCASE("an entry whose meta.json checksums disagree with its files") {
    entries[0].entry.meta["files"]["source.cu"]["sha256"] = std::string(64, '0');
    entries[0].entry.meta["meta_sha256"] = cache::meta_checksum(entries[0].entry.meta);  // resealed
    cache::write_bundle(path, entries);
    CHECK_THROWS_WITH_AS(cache::read_bundle(path), doctest::Contains("source.cu: SHA-256 differs from meta.json"),
                         cache::BundleError);
  }
}

TEST_CASE("first_difference names the first differing field by path") {
  const nlohmann::json a = {{"target", "sm_90a"},
                            {"toolchain", {{"nvrtc", {13, 0}}, {"nvrtc_build", "CL-1"}}},
                            {"opts", {"-O3", "-verbose"}}};
  CHECK_FALSE(cache::first_difference(a, a));
  nlohmann::json b = a;
  b["toolchain"]["nvrtc_build"] = "CL-2";
  auto d = cache::first_difference(a, b);
  REQUIRE(d);
  CHECK(d->path == "toolchain.nvrtc_build");
  CHECK(d->left == "\"CL-1\"");
  CHECK(d->right == "\"CL-2\"");
  b = a;
  b["toolchain"]["nvrtc"][1] = 1;
  CHECK(cache::first_difference(a, b)->path == "toolchain.nvrtc[1]");
  b = a;
  b["opts"].push_back("-G");
  CHECK(cache::first_difference(a, b)->path == "opts");
  b = a;
  b.erase("target");
  d = cache::first_difference(a, b);
  CHECK(d->path == "target");
  CHECK(d->right == "<absent>");
}
