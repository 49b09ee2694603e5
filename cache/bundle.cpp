#include "cache/bundle.hpp"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <nlohmann/json.hpp>
#include <set>

#include "cache/bounded_json.hpp"
#include "cache/fs_util.hpp"
#include "cache/key.hpp"
#include "cache/printable.hpp"
#include "cache/sha256.hpp"

namespace moejit::cache {
namespace {
constexpr std::string_view k_magic = "moejit-cache-bundle 1\n";
// "<decimal size> <64 hex>\n": 20 digits at most.
constexpr size_t k_max_header_line = 20 + 1 + 64 + 1;

std::string short_key(const std::string& key) {
  return key.substr(0, 16);
}

struct Fd {
  int fd = -1;
  ~Fd() {
    if (fd >= 0) ::close(fd);
  }
};

bool write_all(int fd, std::string_view bytes) {
  size_t done = 0;
  while (done < bytes.size()) {
    const ssize_t n = ::write(fd, bytes.data() + done, bytes.size() - done);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return false;
    done += static_cast<size_t>(n);
  }
  return true;
}

// Reads exactly `size` bytes at `offset`; false if the file ends first.
bool read_at(int fd, std::uint64_t offset, std::string& out, std::uint64_t size) {
  out.resize(static_cast<size_t>(size));
  size_t done = 0;
  while (done < out.size()) {
    const ssize_t n = ::pread(fd, out.data() + done, out.size() - done, static_cast<off_t>(offset + done));
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return false;
    done += static_cast<size_t>(n);
  }
  return true;
}

std::string folder_of(const std::string& path) {
  const size_t slash = path.rfind('/');
  return slash == std::string::npos ? "." : slash == 0 ? "/" : path.substr(0, slash);
}

// The manifest's field `name` of `obj`, checked with `ok`; the error names
// where it is, its value and what is allowed.
const nlohmann::json& field(const std::string& path, const nlohmann::json& obj, const std::string& where,
                            const char* name, bool (*ok)(const nlohmann::json&), const char* allowed) {
  const auto it = obj.find(name);
  if (it == obj.end() || !ok(*it))
    throw BundleError(path + ": malformed manifest: " + where + name + " is " +
                      (it == obj.end() ? std::string("missing") : json_excerpt(*it)) + "; it must be " + allowed);
  return *it;
}

bool is_unsigned(const nlohmann::json& v) {
  return v.is_number_unsigned();
}
bool is_string(const nlohmann::json& v) {
  return v.is_string();
}
bool is_array(const nlohmann::json& v) {
  return v.is_array();
}
bool is_object(const nlohmann::json& v) {
  return v.is_object();
}
}  // namespace

void write_bundle(const std::string& path, const std::vector<BundleEntry>& entries) {
  // rename(2) would replace whatever `path` is: a FIFO or device would become
  // a regular file, a link would stop being one.
  if (struct stat st{}; ::lstat(path.c_str(), &st) == 0 && !S_ISREG(st.st_mode))
    throw BundleError(path + " is " + fs::kind_of(st.st_mode) +
                      "; a bundle is written as a regular file: name a new path or an existing regular file");

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
  if (text.size() > k_max_manifest_bytes)
    throw BundleError("the manifest of " + path + " would be " + std::to_string(text.size()) +
                      " bytes, over the limit of " + std::to_string(k_max_manifest_bytes) + " that import accepts");

  const std::string tmp = path + ".tmp-" + fs::unique_suffix();
  Fd out{::open(tmp.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0644)};
  if (out.fd < 0) throw BundleError("cannot create " + tmp + ": " + fs::error_text(errno));
  bool ok = write_all(out.fd, k_magic) &&
            write_all(out.fd, std::to_string(text.size()) + " " + sha256_hex(text) + "\n") && write_all(out.fd, text);
  for (const BundleEntry& e : entries)
    for (const EntryFile& f : e.entry.files) ok = ok && write_all(out.fd, f.bytes);
  ok = ok && ::fsync(out.fd) == 0;
  const int fd = out.fd;
  out.fd = -1;
  ok = ::close(fd) == 0 && ok;
  if (!ok) {
    const std::string why = fs::error_text(errno);
    ::unlink(tmp.c_str());
    throw BundleError("cannot write " + tmp + ": " + why);
  }
  if (std::rename(tmp.c_str(), path.c_str()) != 0) {
    const std::string why = fs::error_text(errno);
    ::unlink(tmp.c_str());
    throw BundleError("cannot rename " + tmp + " to " + path + ": " + why);
  }
  if (const fs::Dir folder = fs::Dir::open(folder_of(path), nullptr)) fs::fsync_dir(folder, nullptr);
}

BundleReader::BundleReader(const std::string& path) : path_(path) {
  // O_NONBLOCK: a FIFO named as the bundle must not block the open.
  Fd in{::open(path.c_str(), O_RDONLY | O_NONBLOCK | O_CLOEXEC)};
  if (in.fd < 0) throw BundleError("cannot open " + path + ": " + fs::error_text(errno));
  struct stat st {};
  if (::fstat(in.fd, &st) != 0) throw BundleError("cannot read " + path + ": " + fs::error_text(errno));
  if (!S_ISREG(st.st_mode)) throw BundleError(path + " is " + fs::kind_of(st.st_mode) + ", not a bundle file");
  const auto file_size = static_cast<std::uint64_t>(st.st_size);

  std::string magic;
  if (!read_at(in.fd, 0, magic, std::min<std::uint64_t>(k_magic.size(), file_size)) || magic != k_magic)
    throw BundleError(path + " is not a moejit cache bundle (bad magic line)");
  std::string header;
  read_at(in.fd, k_magic.size(), header, std::min<std::uint64_t>(k_max_header_line, file_size - k_magic.size()));
  const size_t newline = header.find('\n'), space = header.find(' ');
  std::uint64_t manifest_size = 0;
  const std::string digits = header.substr(0, space), manifest_sha = header.substr(space + 1, newline - space - 1);
  bool header_ok = newline != std::string::npos && space < newline && !digits.empty() && digits.size() <= 20 &&
                   manifest_sha.size() == 64 && is_key(manifest_sha);
  for (char c : digits) header_ok = header_ok && c >= '0' && c <= '9';
  if (!header_ok)
    throw BundleError(path + ": malformed bundle header " + quote(header.substr(0, newline)) +
                      " (expected \"<manifest bytes> <manifest SHA-256>\")");
  manifest_size = digits.size() < 20 ? std::stoull(digits) : ~std::uint64_t(0);
  const std::uint64_t manifest_start = k_magic.size() + newline + 1;
  // Checked before the allocation it asks for.
  if (manifest_size > file_size - manifest_start)
    throw BundleError(path + ": the header declares a manifest of " + std::to_string(manifest_size) +
                      " bytes, but the file holds only " + std::to_string(file_size - manifest_start) +
                      " after it (truncated or damaged)");
  if (manifest_size > k_max_manifest_bytes)
    throw BundleError(path + ": the header declares a manifest of " + std::to_string(manifest_size) +
                      " bytes, over the limit of " + std::to_string(k_max_manifest_bytes));
  std::string text;
  if (!read_at(in.fd, manifest_start, text, manifest_size)) throw BundleError(path + ": truncated manifest");
  if (sha256_hex(text) != manifest_sha) throw BundleError(path + ": the manifest's SHA-256 does not match");
  const std::uint64_t payload_start = manifest_start + manifest_size, payload_bytes = file_size - payload_start;

  nlohmann::json manifest;
  try {
    // The manifest holds each entry's meta.json three levels down.
    manifest = parse_json(text, {k_max_manifest_bytes, k_max_json_depth + 3});
  } catch (const JsonInputError& e) {
    throw BundleError(path + ": malformed manifest: " + e.what());
  }
  if (!manifest.is_object())
    throw BundleError(path + ": malformed manifest: it is " + json_excerpt(manifest) + ", not an object");
  if (manifest.value("format", nlohmann::json()) != "moejit-cache-bundle" ||
      manifest.value("version", nlohmann::json()) != 1)
    throw BundleError(path + ": unsupported bundle format or version (format " +
                      json_excerpt(manifest.value("format", nlohmann::json())) + ", version " +
                      json_excerpt(manifest.value("version", nlohmann::json())) +
                      "; this moejit reads \"moejit-cache-bundle\" 1)");
  const nlohmann::json& declared = field(path, manifest, "", "payload_bytes", is_unsigned, "the payload's size");
  if (declared.get<std::uint64_t>() != payload_bytes)
    throw BundleError(path + ": truncated payload: the manifest declares " +
                      std::to_string(declared.get<std::uint64_t>()) + " bytes, the file holds " +
                      std::to_string(payload_bytes));

  std::set<std::string> keys;
  const nlohmann::json& list = field(path, manifest, "", "entries", is_array, "an array");
  for (size_t i = 0; i < list.size(); ++i) {
    const nlohmann::json& e = list[i];
    const std::string where = "entries[" + std::to_string(i) + "].";
    if (!e.is_object())
      throw BundleError(path + ": malformed manifest: " + where.substr(0, where.size() - 1) + " is " + json_excerpt(e) +
                        "; it must be an object {key, meta, files}");
    Item be;
    be.key = field(path, e, where, "key", is_string, "64 lowercase hex digits").get<std::string>();
    if (!is_key(be.key)) throw BundleError(path + ": malformed key " + quote(be.key));
    if (!keys.insert(be.key).second) throw BundleError(path + ": entry " + short_key(be.key) + " appears twice");
    be.meta = field(path, e, where, "meta", is_object, "an object (the entry's meta.json)");
    const nlohmann::json& files = field(path, e, where, "files", is_array, "an array of {name, offset, size, sha256}");
    for (size_t j = 0; j < files.size(); ++j) {
      const nlohmann::json& f = files[j];
      const std::string at = where + "files[" + std::to_string(j) + "].";
      if (!f.is_object())
        throw BundleError(path + ": malformed manifest: " + at.substr(0, at.size() - 1) + " is " + json_excerpt(f) +
                          "; it must be an object {name, offset, size, sha256}");
      File file;
      file.name = field(path, f, at, "name", is_string, "a file name").get<std::string>();
      file.offset = field(path, f, at, "offset", is_unsigned, "a byte offset").get<std::uint64_t>();
      file.size = field(path, f, at, "size", is_unsigned, "a byte count").get<std::uint64_t>();
      file.sha256 = field(path, f, at, "sha256", is_string, "64 lowercase hex digits").get<std::string>();
      const std::string what = "entry " + short_key(be.key) + " (" + printable(file.name, 32) + ")";
      if (file.offset > payload_bytes || file.size > payload_bytes - file.offset)
        throw BundleError(path + ": truncated payload in " + what);
      if (file.size > k_max_file_bytes)
        throw BundleError(path + ": " + what + " is " + std::to_string(file.size) + " bytes, over the limit of " +
                          std::to_string(k_max_file_bytes));
      be.files.push_back(std::move(file));
    }
    // The meta.json alone (format, key, its own checksum), so an importer's checks read a sealed one.
    if (std::string why = check_meta(be.key, be.meta); !why.empty())
      throw BundleError(path + ": entry " + short_key(be.key) + ": " + why);
    items_.push_back(std::move(be));
  }
  payload_start_ = payload_start;
  fd_ = in.fd;
  in.fd = -1;  // kept open: read() reads the payload through it
}

BundleReader::~BundleReader() {
  if (fd_ >= 0) ::close(fd_);
}

std::uint64_t BundleReader::bytes(size_t i) const {
  const Item& item = items_.at(i);
  std::uint64_t n = item.meta.dump(2).size();
  for (const File& f : item.files) n += f.size;
  return n;
}

BundleEntry BundleReader::read(size_t i) const {
  const Item& item = items_.at(i);
  BundleEntry be;
  be.key = item.key;
  be.entry.meta = item.meta;
  for (const File& f : item.files) {
    EntryFile file{f.name, {}};
    if (!read_at(fd_, payload_start_ + f.offset, file.bytes, f.size))
      throw BundleError(path_ + ": truncated payload in entry " + short_key(item.key) + " (" + printable(f.name, 32) +
                        ")");
    if (sha256_hex(file.bytes) != f.sha256)
      throw BundleError(path_ + ": entry " + short_key(item.key) + ": " + printable(f.name, 32) +
                        " fails its SHA-256 check");
    be.entry.files.push_back(std::move(file));
  }
  if (std::string why = check_sealed(be.key, be.entry.meta, be.entry.files); !why.empty())
    throw BundleError(path_ + ": entry " + short_key(be.key) + ": " + why);
  return be;
}

std::vector<BundleEntry> read_bundle(const std::string& path) {
  const BundleReader reader(path);
  std::vector<BundleEntry> out;
  for (size_t i = 0; i < reader.size(); ++i) out.push_back(reader.read(i));
  return out;
}

}  // namespace moejit::cache
