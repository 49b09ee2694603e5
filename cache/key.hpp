#pragma once
// The cache key: SHA-256 over everything that decides a kernel's bytes.
// The inputs are passed explicitly (cache/ knows nothing of codegen), so a
// test can vary each of them alone; runtime/ builds them from a KernelSpec.

#include <string>
#include <utility>
#include <vector>

namespace moejit::cache {

// Bump when the way a key is derived changes, so old entries can never match.
inline constexpr int k_key_schema_version = 1;

struct KeyInputs {
  std::string identity_json;  // compiler identity: NVRTC/nvJitLink builds, target, options
  std::string spec_json;      // the KernelSpec, constants included
  // (name, bytes) of every template the spec's source includes, in closure order.
  std::vector<std::pair<std::string, std::string>> templates;
  int pass_pipeline_version = 0;

  friend bool operator==(const KeyInputs&, const KeyInputs&) = default;
};

// 64 lowercase hex digits.
std::string compute_key(const KeyInputs& in);

// True for a string that compute_key could have returned.
bool is_key(std::string_view text);

}  // namespace moejit::cache
