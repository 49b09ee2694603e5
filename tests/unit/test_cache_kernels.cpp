// The kernel cache with the real compiler: memory, disk and rebuild paths,
// a flipped cubin byte (acceptance 3), a read-only directory and strict mode
// (acceptance 4).
#include <doctest/doctest.h>

#include "cache/sha256.hpp"
#include "cache_test_util.hpp"
#include "codegen/smoke_kernel.hpp"
#include "jit/kernel_cache.hpp"

using namespace moejit;
using moejit::test::TempDir;

namespace {
const codegen::KernelSpec& smoke_90() {
  static const codegen::KernelSpec s = codegen::smoke_kernel_spec(codegen::Target{codegen::Arch::sm_90a});
  return s;
}
std::string cubin_sha(const jit::CachedKernel& k) {
  return cache::sha256_hex(std::string_view(k.cubin.data(), k.cubin.size()));
}
}  // namespace

TEST_CASE("get_or_build: compiled, then a memory hit, then a disk hit in a new process") {
  TempDir tmp;
  std::vector<std::string> warnings;
  std::shared_ptr<const jit::CachedKernel> first;
  {
    jit::KernelCache kc(test::quiet_config(tmp.path(), &warnings));
    cache::Source source;
    first = kc.get_or_build(smoke_90(), &source);
    CHECK(source == cache::Source::compiled);
    CHECK(first->key == jit::cache_key(smoke_90()));
    CHECK(first->spec == smoke_90());
    CHECK(std::string(first->cubin.data() + 1, 3) == "ELF");
    CHECK(first->source.find("moejit_smoke_mxfp4_dequant(") != std::string::npos);
    CHECK(first->ptx.find(".entry moejit_smoke_mxfp4_dequant") != std::string::npos);
    CHECK_FALSE(first->final_ptx.empty());
    CHECK(first->resources.find(smoke_90().entry_name()) != nullptr);
    CHECK(first->nvrtc_millis > 0);

    // The same object again, for one lookup.
    CHECK(kc.get_or_build(smoke_90(), &source) == first);
    CHECK(source == cache::Source::memory);
    const cache::CounterSnapshot c = kc.counters();
    CHECK(c.memory_hits == 1);
    CHECK(c.compiles == 1);
    CHECK(c.compile_millis > 0);

    // A spec that differs only where the memory layer's hash does not look
    // (a parameter's declaration) is still another kernel.
    codegen::KernelSpec other = smoke_90();
    other.params[0].cxx_type = "const moejit::u8*";
    REQUIRE(jit::KernelSpecHash{}(other) == jit::KernelSpecHash{}(smoke_90()));
    const auto second = kc.get_or_build(other, &source);
    CHECK(source == cache::Source::compiled);
    CHECK(second->key != first->key);
    CHECK(kc.get_or_build(smoke_90()) == first);
  }
  jit::KernelCache fresh(test::quiet_config(tmp.path(), &warnings));
  cache::Source source;
  const auto loaded = fresh.get_or_build(smoke_90(), &source);
  CHECK(source == cache::Source::disk);
  CHECK(loaded->cubin == first->cubin);
  CHECK(loaded->source == first->source);
  CHECK(loaded->ptx == first->ptx);
  CHECK(loaded->final_ptx == first->final_ptx);
  CHECK(loaded->resources == first->resources);
  CHECK(loaded->nvrtc_millis == first->nvrtc_millis);  // the build's figures, kept in meta.json
  CHECK(loaded->meta.at("identity").at("target") == "sm_90a");
  CHECK(fresh.counters().compiles == 0);
  CHECK(warnings.empty());
}

TEST_CASE("acceptance 3: a flipped byte in a cached cubin is detected, reported once and rebuilt") {
  TempDir tmp;
  std::vector<std::string> warnings;
  std::string good_sha;
  {
    jit::KernelCache kc(test::quiet_config(tmp.path(), &warnings));
    good_sha = cubin_sha(*kc.get_or_build(smoke_90()));
  }
  const std::string key = jit::cache_key(smoke_90());
  const std::string cubin_path = tmp.path() + "/v1/" + key + "/kernel.cubin";
  test::flip_byte(cubin_path, 100);
  REQUIRE(cache::sha256_hex(test::read_text(cubin_path)) != good_sha);

  jit::KernelCache kc(test::quiet_config(tmp.path(), &warnings));
  cache::Source source;
  const auto k = kc.get_or_build(smoke_90(), &source);
  CHECK(source == cache::Source::compiled);
  CHECK(cubin_sha(*k) == good_sha);  // never the damaged bytes
  const cache::CounterSnapshot c = kc.counters();
  CHECK(c.verify_failures == 1);
  CHECK(c.compiles == 1);
  REQUIRE(warnings.size() == 1);
  CHECK(warnings[0].find(key.substr(0, 16)) != std::string::npos);
  CHECK(warnings[0].find("kernel.cubin: SHA-256 differs from meta.json") != std::string::npos);
  // The entry on disk was replaced with a good one.
  CHECK(cache::sha256_hex(test::read_text(cubin_path)) == good_sha);
  jit::KernelCache later(test::quiet_config(tmp.path(), &warnings));
  later.get_or_build(smoke_90(), &source);
  CHECK(source == cache::Source::disk);
  CHECK(warnings.size() == 1);
}

TEST_CASE("acceptance 4: a read-only cache directory works from memory with one warning") {
  TempDir tmp;
  test::write_text(tmp / "file", "");  // MOEJIT_CACHE_DIR under a regular file: unwritable, even for root
  std::vector<std::string> warnings;
  jit::KernelCache kc(test::quiet_config(tmp / "file/moejit", &warnings));
  const codegen::KernelSpec smoke_120 = codegen::smoke_kernel_spec(codegen::Target{codegen::Arch::sm_120a});
  cache::Source a, b, c;
  kc.get_or_build(smoke_90(), &a);
  kc.get_or_build(smoke_120, &b);
  const auto again = kc.get_or_build(smoke_90(), &c);
  CHECK(a == cache::Source::compiled);
  CHECK(b == cache::Source::compiled);
  CHECK(c == cache::Source::memory);
  CHECK(std::string(again->cubin.data() + 1, 3) == "ELF");
  CHECK(kc.counters().compiles == 2);
  REQUIRE(warnings.size() == 1);
  CHECK(warnings[0].find("cannot be written") != std::string::npos);
  CHECK_FALSE(kc.store().disk_writable());
}

TEST_CASE("acceptance 4: strict mode fails a miss naming the key and the spec, and serves hits") {
  TempDir tmp;
  std::vector<std::string> warnings;
  cache::Config strict = test::quiet_config(tmp.path(), &warnings);
  strict.no_jit = true;
  const std::string key = jit::cache_key(smoke_90());
  {
    jit::KernelCache kc(strict);
    CHECK_THROWS_WITH_AS(kc.get_or_build(smoke_90()), doctest::Contains((key + ") is not in the kernel cache").c_str()),
                         cache::StrictMissError);
    CHECK_THROWS_WITH(kc.get_or_build(smoke_90()), doctest::Contains(smoke_90().summary().c_str()));
    CHECK(kc.counters().compiles == 0);
  }
  jit::KernelCache(test::quiet_config(tmp.path(), &warnings)).get_or_build(smoke_90());
  jit::KernelCache kc(strict);
  cache::Source source;
  kc.get_or_build(smoke_90(), &source);
  CHECK(source == cache::Source::disk);
}
