// Items 6 and 12 of issue 15. `verify` and `import` accepted entries that can
// never load ("files": {}, no "resources"), so every later load failed instead
// of rebuilding; and integrity was checksum-only, so kernel.cubin swapped
// between two keys with meta.json's checksums resealed passed `verify`, and
// fields outside "files" were not covered at all. Now a kernel entry must be
// loadable and its contents must belong to its key (check_kernel_entry).
#include <doctest/doctest.h>

#include <nlohmann/json.hpp>

#include "cache/bundle.hpp"
#include "cache/disk_store.hpp"
#include "codegen/moe_atoms.hpp"
#include "codegen/moe_config.hpp"
#include "codegen/moe_kernels.hpp"
#include "codegen/smoke_kernel.hpp"
#include "hostile_util.hpp"
#include "jit/kernel_cache.hpp"

using namespace moejit;
using moejit::test::TempDir;

namespace {
const codegen::Target k_sm90{codegen::Arch::sm_90a};

struct Built {
  TempDir scratch;
  std::string root = scratch / "cache";
  std::vector<std::string> warnings;
  jit::KernelCache cache() { return jit::KernelCache(test::quiet_config(root, &warnings)); }
  std::string folder(const std::string& key) const { return root + "/v1/" + key; }
  cache::Loaded load(const std::string& key) const { return cache::DiskStore(root, jit::check_kernel_entry).load(key); }
};

// The entry under `key` is corrupt for `expected`, and `cache verify` says so (exit 1, the BAD line).
void expect_refused(const Built& b, const std::string& key, const codegen::KernelSpec& spec,
                    const std::string& expected) {
  const cache::Loaded l = b.load(key);
  CHECK(l.status == cache::LoadStatus::corrupt);
  CHECK(l.problem == expected);
  const test::CliResult verify = test::moejit(b.scratch, b.root, {"cache", "verify"});
  INFO(verify.output);
  CHECK(verify.exit_code == 1);
  CHECK(test::contains(verify.output, "BAD  " + key.substr(0, 16) + "  " + spec.summary() + ": " + expected));
}
}  // namespace

TEST_CASE(
    "item 6: an entry that passes its checksums but can never load: verify fails it, import refuses it, a load "
    "rebuilds it") {
  Built b;
  const codegen::KernelSpec spec = codegen::smoke_kernel_spec(k_sm90);
  const std::string key = jit::cache_key(spec);
  b.cache().get_or_build(spec);
  std::string expected;
  SUBCASE("\"files\": {}") {
    for (const std::string& name : test::names_in(b.folder(key)))
      if (name != "meta.json") std::filesystem::remove(b.folder(key) + "/" + name);
    test::reseal(b.folder(key), [](nlohmann::json&) {});
    expected = "it holds {}, not the files of a kernel (source.cu, ptx.nvrtc.ptx, ptx.final.ptx, kernel.cubin)";
  }
  SUBCASE("no resources") {
    test::reseal(b.folder(key), [](nlohmann::json& m) { m.erase("resources"); });
    expected = "meta.json has no resources";
  }
  SUBCASE("a spec number outside int's range (import read it as int before it checked: undefined)") {
    test::reseal(b.folder(key), [](nlohmann::json& m) { m["spec"]["threads"] = 1e30; });
    expected = "meta.json: spec.threads is 1e+30; it must be an integer";
  }
  REQUIRE(cache::DiskStore(b.root).load(key).status == cache::LoadStatus::hit);  // its checksums pass
  expect_refused(b, key, spec, expected);

  const std::string bundle = b.scratch / "bad.moejit";
  cache::write_bundle(bundle, {{key, test::entry_in(b.folder(key))}});
  const test::CliResult import = test::moejit(b.scratch, b.scratch / "elsewhere", {"cache", "import", bundle});
  INFO(import.output);
  CHECK(import.exit_code == 1);
  CHECK(test::contains(import.output, "refusing " + bundle + ": entry " + key.substr(0, 16)));
  CHECK(test::contains(import.output, expected));
  CHECK_FALSE(std::filesystem::exists(b.scratch / "elsewhere/v1/" + key));

  cache::Source source;
  CHECK(b.cache().get_or_build(spec, &source)->cubin.size() > 4);
  CHECK(source == cache::Source::compiled);
  REQUIRE(b.warnings.size() == 1);
  CHECK(test::contains(b.warnings[0], "failed verification: " + expected + "; removed and rebuilding it"));
  CHECK(b.load(key).status == cache::LoadStatus::hit);
}

TEST_CASE("item 12: the key binds the contents: a swapped cubin, an edited spec or source, an unsealed field") {
  Built b;
  // Two kernels of one family and target that differ only in a constant.
  const codegen::KernelSpec one = codegen::moe_weight_transform_spec(
                                codegen::builtin_model("glm5.2"),
                                *codegen::find_atom(k_sm90, codegen::ComputePath::fast), k_sm90,
                                codegen::Projection::w1),
                            two = codegen::moe_weight_transform_spec(
                                codegen::builtin_model("glm5.2"),
                                *codegen::find_atom(k_sm90, codegen::ComputePath::fast), k_sm90,
                                codegen::Projection::w2);
  const std::string key1 = jit::cache_key(one), key2 = jit::cache_key(two);
  {
    jit::KernelCache kc = b.cache();
    kc.get_or_build(one);
    kc.get_or_build(two);
  }
  std::string expected;
  SUBCASE("kernel.cubin swapped with the other key's, checksums resealed") {
    const std::string cubin1 = test::read_text(b.folder(key1) + "/kernel.cubin");
    test::write_text(b.folder(key1) + "/kernel.cubin", test::read_text(b.folder(key2) + "/kernel.cubin"));
    test::write_text(b.folder(key2) + "/kernel.cubin", cubin1);
    test::reseal(b.folder(key1), [](nlohmann::json&) {});
    test::reseal(b.folder(key2), [](nlohmann::json&) {});
    expected =
        "kernel.cubin was built for key " + key2.substr(0, 16) + ", not this one (a cubin under another key's name)";
  }
  SUBCASE("the spec edited, resealed") {
    test::reseal(b.folder(key1), [&](nlohmann::json& m) { m["spec"] = nlohmann::json(two); });
    expected = "meta.json's spec keys as " + key2.substr(0, 16) + " here, not as its folder's name";
  }
  SUBCASE("source.cu swapped, resealed") {
    test::write_text(b.folder(key1) + "/source.cu", test::read_text(b.folder(key2) + "/source.cu"));
    test::reseal(b.folder(key1), [](nlohmann::json&) {});
    expected = "source.cu is not the source this moejit emits for the spec";
  }
  SUBCASE("ptx.nvrtc.ptx swapped, resealed") {
    test::write_text(b.folder(key1) + "/ptx.nvrtc.ptx", test::read_text(b.folder(key2) + "/ptx.nvrtc.ptx"));
    test::reseal(b.folder(key1), [](nlohmann::json&) {});
    expected = "ptx.final.ptx is not what the PTX passes make of ptx.nvrtc.ptx, followed by the key";
  }
  SUBCASE("a field outside \"files\" changed without resealing") {
    nlohmann::json meta = nlohmann::json::parse(test::read_text(b.folder(key1) + "/meta.json"));
    meta["resources"]["kernels"][0]["registers"] = 1;
    test::write_text(b.folder(key1) + "/meta.json", meta.dump(2));
    expected = "meta.json: meta_sha256 differs from the SHA-256 of the other fields (a field was changed)";
  }
  expect_refused(b, key1, one, expected);
  // The runtime rebuilds it instead of loading another kernel's code.
  cache::Source source;
  b.cache().get_or_build(one, &source);
  CHECK(source == cache::Source::compiled);
  CHECK(b.load(key1).status == cache::LoadStatus::hit);
}

TEST_CASE("item 12: an entry built by another toolkit is stale: never loaded, reported, not a failure") {
  Built b;
  const codegen::KernelSpec spec = codegen::smoke_kernel_spec(k_sm90);
  const std::string key = jit::cache_key(spec), theirs = std::string(64, 'e');
  b.cache().get_or_build(spec);
  // What an older toolkit left: its own key for the spec, its own identity.
  std::filesystem::rename(b.folder(key), b.folder(theirs));
  test::reseal(b.folder(theirs), [&](nlohmann::json& m) {
    m["key"] = theirs;
    m["identity"]["toolchain"]["nvrtc_build"] = "CL-00000000";
  });
  const cache::Loaded l = b.load(theirs);
  CHECK(l.status == cache::LoadStatus::stale);
  CHECK(test::contains(l.problem,
                       "built by another toolkit (compiler identity field 'toolchain.nvrtc_build' is "
                       "\"CL-00000000\" there"));
  const test::CliResult verify = test::moejit(b.scratch, b.root, {"cache", "verify"});
  INFO(verify.output);
  CHECK(verify.exit_code == 0);
  CHECK(test::contains(verify.output, "STALE  eeeeeeeeeeeeeeee"));
  CHECK(test::contains(verify.output, "verified 1 entries: 0 ok, 0 bad, 1 stale"));
}
