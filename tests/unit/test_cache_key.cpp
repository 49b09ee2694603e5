// Acceptance 5: the key changes when any input changes (compiler identity,
// spec constant, template byte, pass-pipeline version), and only then.
#include <doctest/doctest.h>

#include <nlohmann/json.hpp>

#include "cache/key.hpp"
#include "codegen/compiler_identity.hpp"
#include "codegen/smoke_kernel.hpp"
#include "jit/kernel_cache.hpp"
#include "ptx_passes/pipeline_version.hpp"
#include "templates/registry.hpp"

using namespace moejit;

namespace {
cache::KeyInputs sample_inputs() {
  cache::KeyInputs in;
  in.identity_json = R"({"target":"sm_90a","toolchain":{"nvrtc":[13,0]}})";
  in.spec_json = R"({"constants":[["kThreads",256]],"kernel":"k"})";
  in.templates = {{"a.cuh", "template a"}, {"b.cuh", "template b"}};
  in.pass_pipeline_version = 3;
  return in;
}
}  // namespace

TEST_CASE("compute_key is a deterministic 64-digit hex SHA-256") {
  const std::string key = cache::compute_key(sample_inputs());
  CHECK(cache::is_key(key));
  CHECK(cache::compute_key(sample_inputs()) == key);
  CHECK_FALSE(cache::is_key(key.substr(1)));
  CHECK_FALSE(cache::is_key("G" + key.substr(1)));
  CHECK_FALSE(cache::is_key(std::string(64, 'A')));
}

TEST_CASE("each key input alone changes the key") {
  const std::string base = cache::compute_key(sample_inputs());
  auto changed = [&](auto&& edit) {
    cache::KeyInputs in = sample_inputs();
    edit(in);
    return cache::compute_key(in) != base;
  };
  CHECK(changed([](cache::KeyInputs& in) { in.identity_json[20] = 'X'; }));
  CHECK(changed([](cache::KeyInputs& in) { in.spec_json = R"({"constants":[["kThreads",128]],"kernel":"k"})"; }));
  CHECK(changed([](cache::KeyInputs& in) { in.templates[1].second[3] ^= 1; }));   // one template byte
  CHECK(changed([](cache::KeyInputs& in) { in.templates[0].first = "c.cuh"; }));  // a template's name
  CHECK(changed([](cache::KeyInputs& in) { in.templates.pop_back(); }));          // one include fewer
  CHECK(changed([](cache::KeyInputs& in) { in.pass_pipeline_version += 1; }));
  // Bytes moved across a field boundary are a different input.
  CHECK(changed([](cache::KeyInputs& in) { in.templates = {{"a.cuh", "template ab.cuh"}, {"", "template b"}}; }));
  CHECK(changed([](cache::KeyInputs& in) {
    in.templates = {{"a.cuh", "template a"}, {"b.cuh", "template b"}, {"", ""}};
  }));
  // ...and nothing else: an identical copy keys identically.
  CHECK_FALSE(changed([](cache::KeyInputs&) {}));
}

TEST_CASE("the key inputs of a KernelSpec are its identity, JSON, template closure and pass version") {
  const codegen::KernelSpec spec = codegen::smoke_kernel_spec(codegen::Target{codegen::Arch::sm_90a});
  const cache::KeyInputs in = jit::key_inputs(spec);
  CHECK(in.identity_json == nlohmann::json(codegen::compiler_identity(spec.target)).dump());
  CHECK(in.spec_json == nlohmann::json(spec).dump());
  CHECK(in.pass_pipeline_version == ptx::k_pass_pipeline_version);
  const auto closure = templates::closure(spec.template_file);
  REQUIRE(in.templates.size() == closure.size());
  REQUIRE(closure.size() == 2);  // the smoke template and mx_types.cuh: includes are covered
  for (size_t i = 0; i < closure.size(); ++i) {
    CHECK(in.templates[i].first == closure[i]->name);
    CHECK(in.templates[i].second == closure[i]->bytes);
  }
}

TEST_CASE("kernel keys: equal specs key equally, every input change rekeys") {
  using codegen::Arch;
  const codegen::KernelSpec spec = codegen::smoke_kernel_spec(codegen::Target{Arch::sm_90a});
  const std::string key = jit::cache_key(spec);

  SUBCASE("only then: a copy, and a spec round-tripped through meta.json, key identically") {
    CHECK(jit::cache_key(codegen::smoke_kernel_spec(codegen::Target{Arch::sm_90a})) == key);
    CHECK(jit::cache_key(nlohmann::json(spec).get<codegen::KernelSpec>()) == key);
    CHECK(jit::key_inputs(spec) == jit::key_inputs(spec));
  }
  SUBCASE("a spec constant") {
    CHECK(jit::cache_key(codegen::smoke_kernel_spec(codegen::Target{Arch::sm_90a}, 128)) != key);
    codegen::KernelSpec s = spec;
    s.constants[0].second += 1;  // the constant alone, launch bounds untouched
    CHECK(jit::cache_key(s) != key);
  }
  SUBCASE("the target (and so the identity)") {
    CHECK(jit::cache_key(codegen::smoke_kernel_spec(codegen::Target{Arch::sm_120a})) != key);
  }
  SUBCASE("each field of the compiler identity") {
    const codegen::CompilerIdentity id = codegen::compiler_identity(spec.target);
    std::vector<codegen::CompilerIdentity> variants(7, id);
    variants[0].toolchain.nvrtc_minor += 1;
    variants[1].toolchain.nvjitlink_minor += 1;
    variants[2].toolchain.nvrtc_release += "-patch";
    variants[3].toolchain.nvrtc_build += "1";
    variants[4].nvrtc_options.push_back("-G");
    variants[5].nvjitlink_options.push_back("-lineinfo");
    variants[6].toolchain.nvjitlink_release += "-patch";
    for (const codegen::CompilerIdentity& v : variants) {
      cache::KeyInputs in = jit::key_inputs(spec);
      in.identity_json = nlohmann::json(v).dump();
      CHECK(cache::compute_key(in) != key);
    }
  }
  SUBCASE("a template byte, in the kernel's template or in one it includes") {
    for (size_t t = 0; t < 2; ++t) {
      cache::KeyInputs in = jit::key_inputs(spec);
      in.templates[t].second.back() ^= 0x20;
      CHECK(cache::compute_key(in) != key);
    }
  }
  SUBCASE("the pass-pipeline version") {
    cache::KeyInputs in = jit::key_inputs(spec);
    in.pass_pipeline_version = ptx::k_pass_pipeline_version + 1;
    CHECK(cache::compute_key(in) != key);
  }
}
