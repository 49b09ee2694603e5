#include "cache/sha256.hpp"

#include <llvm/ADT/StringExtras.h>
#include <llvm/Support/SHA256.h>

namespace moejit::cache {

struct Sha256::Impl {
  llvm::SHA256 sha;
};

Sha256::Sha256() : impl_(std::make_unique<Impl>()) {}
Sha256::~Sha256() = default;

void Sha256::update(std::string_view bytes) {
  impl_->sha.update(llvm::StringRef(bytes.data(), bytes.size()));
}

void Sha256::field(std::string_view bytes) {
  // Little-endian 64-bit length, so the framing does not depend on the host.
  char len[8];
  std::uint64_t n = bytes.size();
  for (char& c : len) c = static_cast<char>(n & 0xFF), n >>= 8;
  update(std::string_view(len, sizeof len));
  update(bytes);
}

std::string Sha256::hex() {
  const std::array<std::uint8_t, 32> digest = impl_->sha.final();
  return llvm::toHex(digest, /*LowerCase=*/true);
}

std::string sha256_hex(std::string_view bytes) {
  Sha256 h;
  h.update(bytes);
  return h.hex();
}

}  // namespace moejit::cache
