#include "cache/entry.hpp"

#include <stdexcept>

#include "cache/printable.hpp"
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
constexpr std::string_view k_meta_checksum = "meta_sha256";

bool plain_name(std::string_view name) {
  return !name.empty() && name != "." && name != ".." && name != k_meta_file &&
         name.find('/') == std::string_view::npos && name.find('\0') == std::string_view::npos;
}

bool is_sha256(const nlohmann::json& v) {
  if (!v.is_string()) return false;
  const std::string& s = v.get_ref<const std::string&>();
  if (s.size() != 64) return false;
  for (char c : s)
    if (!((c >= '0' && c <= '9') || (c >= 'a' && c <= 'f'))) return false;
  return true;
}

// 2^62 s: any time a clock can report, far from the int64 edge.
constexpr std::int64_t k_max_unix_seconds = std::int64_t(1) << 62;
}  // namespace

std::string meta_checksum(const nlohmann::json& meta) {
  nlohmann::json rest = meta;
  if (rest.is_object()) rest.erase(std::string(k_meta_checksum));
  return sha256_hex(rest.dump());
}

nlohmann::json sealed_meta(std::string_view key, const Entry& entry, std::int64_t created_unix) {
  nlohmann::json meta = entry.meta.is_object() ? entry.meta : nlohmann::json::object();
  nlohmann::json files = nlohmann::json::object();
  for (const EntryFile& f : entry.files) {
    if (!plain_name(f.name)) throw std::invalid_argument("cache entry: bad file name " + quote(f.name));
    files[f.name] = {{"size", f.bytes.size()}, {"sha256", sha256_hex(f.bytes)}};
  }
  meta["key"] = key;
  meta["format"] = k_entry_format;
  meta["created_unix"] = created_unix;
  meta["files"] = std::move(files);
  meta.erase(std::string(k_meta_checksum));
  meta[std::string(k_meta_checksum)] = meta_checksum(meta);
  return meta;
}

bool foreign_format(const nlohmann::json& meta, std::string* why) {
  if (!meta.is_object()) return false;
  const auto it = meta.find("format");
  if (it == meta.end() || !it->is_number_integer() || *it == k_entry_format) return false;
  if (why)
    *why = "written by another moejit (entry format " + json_excerpt(*it) + "; this one reads format " +
           std::to_string(k_entry_format) + ")";
  return true;
}

std::string check_meta(std::string_view key, const nlohmann::json& meta) {
  if (!meta.is_object()) return "meta.json is " + json_excerpt(meta) + ", not an object";
  auto field = [&](const char* name) -> const nlohmann::json* {
    const auto it = meta.find(name);
    return it == meta.end() ? nullptr : &*it;
  };
  auto bad = [](const std::string& name, const nlohmann::json* v, const std::string& allowed) {
    return "meta.json: " + name + " is " + (v ? json_excerpt(*v) : std::string("missing")) + "; it must be " + allowed;
  };
  const nlohmann::json* format = field("format");
  if (!format || *format != k_entry_format) return bad("format", format, std::to_string(k_entry_format));
  const nlohmann::json* k = field("key");
  if (!k || !k->is_string()) return bad("key", k, "the entry's key (64 hex digits)");
  if (*k != key) return "meta.json names another key";
  const nlohmann::json* created = field("created_unix");
  if (!created || !created->is_number_integer() || created->get<std::int64_t>() < 0 ||
      created->get<std::int64_t>() > k_max_unix_seconds)
    return bad("created_unix", created, "an integer in [0, 2^62] (seconds since 1970)");
  const nlohmann::json* files = field("files");
  if (!files || !files->is_object()) return bad("files", files, "an object {name: {size, sha256}}");
  for (const auto& [name, info] : files->items()) {
    // Never follow a listed name out of the entry folder.
    if (!plain_name(name)) return "meta.json lists a bad file name " + quote(name);
    const std::string where = "files." + quote(name);
    if (!info.is_object()) return bad(where, &info, "an object {size, sha256}");
    const auto size = info.find("size");
    if (size == info.end() || !size->is_number_unsigned() || size->get<std::uint64_t>() > k_max_file_bytes)
      return bad(where + ".size", size == info.end() ? nullptr : &*size,
                 "an integer in [0, " + std::to_string(k_max_file_bytes) + "]");
    const auto sha = info.find("sha256");
    if (sha == info.end() || !is_sha256(*sha))
      return bad(where + ".sha256", sha == info.end() ? nullptr : &*sha, "64 lowercase hex digits");
  }
  const nlohmann::json* sealed = field(k_meta_checksum.data());
  if (!sealed || !is_sha256(*sealed)) return bad(std::string(k_meta_checksum), sealed, "64 lowercase hex digits");
  if (*sealed != meta_checksum(meta))
    return "meta.json: meta_sha256 differs from the SHA-256 of the other fields (a field was changed)";
  return {};
}

std::string check_sealed(std::string_view key, const nlohmann::json& meta, const std::vector<EntryFile>& files) {
  if (std::string why = check_meta(key, meta); !why.empty()) return why;
  const nlohmann::json& listed = meta.at("files");
  if (listed.size() != files.size()) return "the entry does not hold the files meta.json lists";
  for (const EntryFile& f : files) {
    const auto expected = listed.find(f.name);
    if (expected == listed.end()) return quote(f.name) + " is not listed in meta.json";
    if (expected->at("size").get<std::uint64_t>() != f.bytes.size())
      return printable(f.name) + ": size differs from meta.json";
    if (expected->at("sha256") != sha256_hex(f.bytes)) return printable(f.name) + ": SHA-256 differs from meta.json";
  }
  return {};
}

std::string meta_summary(const nlohmann::json& meta) {
  if (meta.is_object())
    if (auto it = meta.find("summary"); it != meta.end() && it->is_string())
      return printable(it->get_ref<const std::string&>(), 512);
  return "?";
}

}  // namespace moejit::cache
