#pragma once
// SHA-256 (LLVM's implementation) with lowercase hex output: the one digest
// the cache uses for keys, file checksums and bundles.

#include <cstdint>
#include <memory>
#include <string>
#include <string_view>

namespace moejit::cache {

class Sha256 {
 public:
  Sha256();
  ~Sha256();
  Sha256(const Sha256&) = delete;
  Sha256& operator=(const Sha256&) = delete;

  void update(std::string_view bytes);
  // A length-prefixed field: concatenations of fields can never collide
  // ("ab"+"c" and "a"+"bc" hash differently).
  void field(std::string_view bytes);
  std::string hex();  // finishes the digest

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

std::string sha256_hex(std::string_view bytes);

}  // namespace moejit::cache
