#include "cache/bundle.hpp"

#include <cstdio>
#include <fstream>
#include <nlohmann/json.hpp>

#include "cache/bounded_json.hpp"
#include "cache/fs_util.hpp"
#include "cache/key.hpp"
#include "cache/printable.hpp"
#include "cache/sha256.hpp"

namespace moejit::cache {
namespace {
constexpr std::string_view k_magic = "moejit-cache-bundle 1\n";

std::string short_key(const std::string& key) {
  return key.substr(0, 16);
}
}  // namespace

void write_bundle(const std::string& path, const std::vector<BundleEntry>& entries) {
  nlohmann::json list = nlohmann::json::array();
  std::uint64_t offset = 0;
  for (const BundleEntry& e : entries) {
    nlohmann::json files = nlohmann::json::array();
    for (const EntryFile& f : e.entry.files) {
      files.push_back(
          {{"name", f.name}, {"offset", offset}, {"size", f.bytes.size()}, {"sha256", sha256_hex(f.bytes)}});
      offset += f.bytes.size();
    }
    list.push_back({{"key", e.key}, {"meta", e.entry.meta}, {"files", files}});
  }
  const nlohmann::json manifest = {{"format", "moejit-cache-bundle"},
                                   {"version", 1},
                                   {"created_unix", fs::now_seconds()},
                                   {"payload_bytes", offset},
                                   {"entries", list}};
  const std::string text = manifest.dump();

  const std::string tmp = path + ".tmp-" + fs::unique_suffix();
  {
    std::ofstream out(tmp, std::ios::binary | std::ios::trunc);
    out << k_magic << text.size() << ' ' << sha256_hex(text) << '\n' << text;
    for (const BundleEntry& e : entries)
      for (const EntryFile& f : e.entry.files) out.write(f.bytes.data(), static_cast<std::streamsize>(f.bytes.size()));
    out.flush();
    if (!out) {
      std::remove(tmp.c_str());
      throw BundleError("cannot write " + tmp);
    }
  }
  if (std::rename(tmp.c_str(), path.c_str()) != 0) {
    const std::string why = fs::error_text(errno);
    std::remove(tmp.c_str());
    throw BundleError("cannot rename " + tmp + " to " + path + ": " + why);
  }
}

std::vector<BundleEntry> read_bundle(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) throw BundleError("cannot open " + path + ": " + fs::error_text(errno));
  std::string magic(k_magic.size(), '\0');
  in.read(magic.data(), static_cast<std::streamsize>(magic.size()));
  if (!in || magic != k_magic) throw BundleError(path + " is not a moejit cache bundle (bad magic line)");
  std::uint64_t manifest_size = 0;
  std::string manifest_sha;
  in >> manifest_size >> manifest_sha;
  if (!in || in.get() != '\n' || manifest_size > (std::uint64_t(1) << 32))
    throw BundleError(path + ": malformed bundle header");
  std::string text(manifest_size, '\0');
  in.read(text.data(), static_cast<std::streamsize>(text.size()));
  if (!in) throw BundleError(path + ": truncated manifest");
  if (sha256_hex(text) != manifest_sha) throw BundleError(path + ": the manifest's SHA-256 does not match");
  const std::streamoff payload_start = in.tellg();
  in.seekg(0, std::ios::end);
  const auto payload_bytes = static_cast<std::uint64_t>(in.tellg() - payload_start);

  std::vector<BundleEntry> out;
  try {
    // The manifest holds each entry's meta.json three levels down.
    const nlohmann::json manifest = parse_json(text, {manifest_size, k_max_json_depth + 3});
    if (manifest.at("format") != "moejit-cache-bundle" || manifest.at("version") != 1)
      throw BundleError(path + ": unsupported bundle format or version");
    for (const auto& e : manifest.at("entries")) {
      BundleEntry be;
      be.key = e.at("key").get<std::string>();
      if (!is_key(be.key)) throw BundleError(path + ": malformed key '" + be.key + "'");
      be.entry.meta = e.at("meta");
      for (const auto& f : e.at("files")) {
        EntryFile file{f.at("name").get<std::string>(), {}};
        const auto offset = f.at("offset").get<std::uint64_t>(), size = f.at("size").get<std::uint64_t>();
        if (offset > payload_bytes || size > payload_bytes - offset)
          throw BundleError(path + ": truncated payload in entry " + short_key(be.key) + " (" + file.name + ")");
        file.bytes.resize(size);
        in.seekg(payload_start + static_cast<std::streamoff>(offset));
        in.read(file.bytes.data(), static_cast<std::streamsize>(file.bytes.size()));
        if (!in) throw BundleError(path + ": truncated payload in entry " + short_key(be.key) + " (" + file.name + ")");
        if (sha256_hex(file.bytes) != f.at("sha256").get<std::string>())
          throw BundleError(path + ": entry " + short_key(be.key) + ": " + file.name + " fails its SHA-256 check");
        be.entry.files.push_back(std::move(file));
      }
      if (std::string why = check_sealed(be.key, be.entry.meta, be.entry.files); !why.empty())
        throw BundleError(path + ": entry " + short_key(be.key) + ": " + why);
      out.push_back(std::move(be));
    }
  } catch (const JsonInputError& e) {
    throw BundleError(path + ": malformed manifest: " + e.what());
  } catch (const nlohmann::json::exception& e) {
    throw BundleError(path + ": malformed manifest: " + printable(e.what(), 200));
  }
  return out;
}

}  // namespace moejit::cache
