#include "cache/key.hpp"

#include "cache/sha256.hpp"

namespace moejit::cache {

std::string compute_key(const KeyInputs& in) {
  // Every input is a tagged, length-prefixed field: no input can shift bytes
  // into its neighbour and keep the digest.
  Sha256 h;
  h.field("moejit-kernel-key");
  h.field(std::to_string(k_key_schema_version));
  h.field("identity");
  h.field(in.identity_json);
  h.field("spec");
  h.field(in.spec_json);
  h.field("templates");
  h.field(std::to_string(in.templates.size()));
  for (const auto& [name, bytes] : in.templates) {
    h.field(name);
    h.field(bytes);
  }
  h.field("pass-pipeline");
  h.field(std::to_string(in.pass_pipeline_version));
  return h.hex();
}

bool is_key(std::string_view text) {
  if (text.size() != 64) return false;
  for (char c : text)
    if (!((c >= '0' && c <= '9') || (c >= 'a' && c <= 'f'))) return false;
  return true;
}

}  // namespace moejit::cache
