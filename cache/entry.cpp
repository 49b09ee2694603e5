#include "cache/entry.hpp"

#include <stdexcept>

#include "cache/sha256.hpp"

namespace moejit::cache {

const EntryFile* Entry::file(std::string_view name) const {
  for (const EntryFile& f : files)
    if (f.name == name) return &f;
  return nullptr;
}

std::uint64_t Entry::bytes() const {
  std::uint64_t n = 0;
  for (const EntryFile& f : files) n += f.bytes.size();
  return n;
}

namespace {
bool plain_name(std::string_view name) {
  return !name.empty() && name != "." && name != ".." && name != k_meta_file &&
         name.find('/') == std::string_view::npos && name.find('\0') == std::string_view::npos;
}
}  // namespace

nlohmann::json sealed_meta(std::string_view key, const Entry& entry, std::int64_t created_unix) {
  nlohmann::json meta = entry.meta.is_object() ? entry.meta : nlohmann::json::object();
  nlohmann::json files = nlohmann::json::object();
  for (const EntryFile& f : entry.files) {
    if (!plain_name(f.name)) throw std::invalid_argument("cache entry: bad file name '" + f.name + "'");
    files[f.name] = {{"size", f.bytes.size()}, {"sha256", sha256_hex(f.bytes)}};
  }
  meta["key"] = key;
  meta["format"] = k_entry_format;
  meta["created_unix"] = created_unix;
  meta["files"] = std::move(files);
  return meta;
}

std::string check_sealed(std::string_view key, const nlohmann::json& meta, const std::vector<EntryFile>& files) {
  if (!meta.is_object()) return "meta.json is not an object";
  if (meta.value("format", 0) != k_entry_format) return "meta.json has an unknown format";
  if (meta.value("key", std::string()) != key) return "meta.json names another key";
  const auto it = meta.find("files");
  if (it == meta.end() || !it->is_object()) return "meta.json lists no files";
  if (it->size() != files.size()) return "the entry does not hold the files meta.json lists";
  for (const EntryFile& f : files) {
    const auto expected = it->find(f.name);
    if (expected == it->end()) return f.name + " is not listed in meta.json";
    if (expected->value("size", std::uint64_t(-1)) != f.bytes.size()) return f.name + ": size differs from meta.json";
    if (expected->value("sha256", std::string()) != sha256_hex(f.bytes))
      return f.name + ": SHA-256 differs from meta.json";
  }
  return {};
}

std::string meta_summary(const nlohmann::json& meta) {
  if (meta.is_object())
    if (auto it = meta.find("summary"); it != meta.end() && it->is_string()) return it->get<std::string>();
  return "?";
}

}  // namespace moejit::cache
