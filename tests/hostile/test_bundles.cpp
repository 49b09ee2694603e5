// Items 2, 8 and 10 of issue 15 for bundles: `cache export FILE` renamed its
// temp file over whatever FILE was (a FIFO or a character device became a
// regular file, with exit 0); a header declaring a 4 GiB manifest allocated
// 4.2 GB before checking it against the file size; and import was neither
// atomic (a bundle whose second entry was bad left the first imported) nor
// capped (it never evicted to MOEJIT_CACHE_MAX_BYTES).
#include <doctest/doctest.h>
#include <sys/resource.h>
#include <sys/sysmacros.h>

#include "cache/bundle.hpp"
#include "cache/disk_store.hpp"
#include "codegen/moe_atoms.hpp"
#include "codegen/moe_config.hpp"
#include "codegen/moe_kernels.hpp"
#include "codegen/smoke_kernel.hpp"
#include "hostile_util.hpp"
#include "jit/kernel_cache.hpp"

using namespace moejit;
using moejit::test::TempDir;

namespace {
const codegen::Target k_sm90{codegen::Arch::sm_90a};

// Two real kernel entries in a cache, and the bundle of them.
struct Kernels {
  TempDir scratch;
  std::string root = scratch / "cache", bundle = scratch / "kernels.moejit";
  std::vector<std::string> keys;
  std::vector<cache::BundleEntry> entries;
  Kernels() {
    std::vector<std::string> warnings;
    jit::KernelCache kc(test::quiet_config(root, &warnings));
    for (const codegen::KernelSpec& spec :
         {codegen::smoke_kernel_spec(k_sm90),
          codegen::moe_weight_transform_spec(codegen::builtin_model("glm5.2"),
                                             *codegen::find_atom(k_sm90, codegen::ComputePath::fast), k_sm90,
                                             codegen::Projection::w1)}) {
      kc.get_or_build(spec);
      keys.push_back(jit::cache_key(spec));
      entries.push_back({keys.back(), test::entry_in(root + "/v1/" + keys.back())});
    }
    cache::write_bundle(bundle, entries);
  }
  std::vector<std::string> keys_in(const std::string& cache_root) const {
    std::vector<std::string> out;
    for (const std::string& name : test::names_in(cache_root + "/v1"))
      if (name != "stats.json") out.push_back(name);
    return out;
  }
};

// `moejit args...` with files larger than `max_file_bytes` refused (EFBIG),
// as on a file system that fills up part way through.
test::CliResult moejit_with_file_limit(const TempDir& scratch, const std::string& cache_dir,
                                       const std::vector<std::string>& args, rlim_t max_file_bytes) {
  const std::string out = scratch / "limited.out";
  const pid_t pid = ::fork();
  if (pid == 0) {
    const rlimit limit{max_file_bytes, max_file_bytes};
    ::setrlimit(RLIMIT_FSIZE, &limit);
    ::signal(SIGXFSZ, SIG_IGN);  // a write past the limit fails with EFBIG instead of killing
    ::setenv("MOEJIT_CACHE_DIR", cache_dir.c_str(), 1);
    const int fd = ::open(out.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
    ::dup2(fd, 1);
    ::dup2(fd, 2);
    std::vector<std::string> argv = {MOEJIT_BINARY};
    argv.insert(argv.end(), args.begin(), args.end());
    std::vector<char*> ptrs;
    for (std::string& a : argv) ptrs.push_back(a.data());
    ptrs.push_back(nullptr);
    ::execv(ptrs[0], ptrs.data());
    ::_exit(98);
  }
  test::CliResult r;
  r.exit_code = test::wait_within(pid, 300);
  r.output = test::read_text(out);
  return r;
}

size_t largest_file(const cache::Entry& e) {
  size_t n = 0;
  for (const cache::EntryFile& f : e.files) n = std::max(n, f.bytes.size());
  return n;
}
}  // namespace

TEST_CASE("item 2: cache export never replaces a FIFO, a device, a folder or a link") {
  Kernels k;
  const std::string target = k.scratch / "precious.txt";
  test::write_text(target, "precious");
  std::vector<std::pair<std::string, std::function<bool(const struct stat&)>>> cases;
  test::make_fifo(k.scratch / "fifo");
  cases.emplace_back(k.scratch / "fifo", [](const struct stat& st) { return S_ISFIFO(st.st_mode); });
  test::make_link(target, k.scratch / "link");
  cases.emplace_back(k.scratch / "link", [](const struct stat& st) { return S_ISLNK(st.st_mode); });
  std::filesystem::create_directory(k.scratch / "folder");
  cases.emplace_back(k.scratch / "folder", [](const struct stat& st) { return S_ISDIR(st.st_mode); });
  if (::mknod((k.scratch / "null").c_str(), S_IFCHR | 0666, makedev(1, 3)) == 0)
    cases.emplace_back(k.scratch / "null", [](const struct stat& st) { return S_ISCHR(st.st_mode); });
  else
    MESSAGE("not allowed to make a character device here: that case is left out");
  for (const auto& [path, still] : cases) {
    const test::CliResult r = test::moejit(k.scratch, k.root, {"cache", "export", path});
    INFO(path, ": ", r.output);
    CHECK(r.exit_code == 1);
    CHECK(test::contains(r.output, path + " is a"));
    CHECK(test::contains(r.output, "a bundle is written as a regular file"));
    struct stat st {};
    REQUIRE(::lstat(path.c_str(), &st) == 0);
    CHECK(still(st));
  }
  CHECK(test::read_text(target) == "precious");
  // A regular file is what export may replace; no temp file stays behind.
  test::write_text(k.scratch / "old.moejit", "old");
  CHECK(test::moejit(k.scratch, k.root, {"cache", "export", k.scratch / "old.moejit"}).exit_code == 0);
  CHECK(cache::read_bundle(k.scratch / "old.moejit").size() == 2);
  for (const std::string& name : test::names_in(k.scratch.path())) CHECK(name.find(".tmp-") == std::string::npos);
}

TEST_CASE("item 8: a bundle header declaring a 4 GiB manifest is refused before any allocation") {
  Kernels k;
  test::BundleParts parts = test::split_bundle(test::read_text(k.bundle));
  const std::string bytes =
      parts.magic + "4294967296 " + cache::sha256_hex(parts.manifest) + "\n" + parts.manifest + parts.payload;
  test::write_text(k.bundle, bytes);
  const auto t0 = std::chrono::steady_clock::now();
  CHECK_THROWS_WITH_AS(cache::read_bundle(k.bundle),
                       doctest::Contains("the header declares a manifest of 4294967296 bytes, but the file holds only"),
                       cache::BundleError);
  CHECK(std::chrono::steady_clock::now() - t0 < std::chrono::seconds(5));
  // A header that is not one, and a FIFO where the bundle should be.
  test::write_text(k.bundle, parts.magic + std::string(1000, '9') + "\n");
  CHECK_THROWS_WITH_AS(cache::read_bundle(k.bundle), doctest::Contains("malformed bundle header"), cache::BundleError);
  test::make_fifo(k.bundle);
  const test::CliResult r = test::moejit(k.scratch, k.scratch / "there", {"cache", "import", k.bundle});
  CHECK(r.exit_code == 1);
  CHECK(test::contains(r.output, k.bundle + " is a FIFO, not a bundle file"));
}

TEST_CASE("item 10: import is all or nothing: a bad second entry imports nothing") {
  Kernels k;
  test::reseal(k.root + "/v1/" + k.keys[1], [](nlohmann::json& m) { m.erase("resources"); });
  k.entries[1].entry = test::entry_in(k.root + "/v1/" + k.keys[1]);
  cache::write_bundle(k.bundle, k.entries);
  const std::string there = k.scratch / "there";
  const test::CliResult r = test::moejit(k.scratch, there, {"cache", "import", k.bundle});
  INFO(r.output);
  CHECK(r.exit_code == 1);
  CHECK(test::contains(r.output, "meta.json has no resources"));
  CHECK(k.keys_in(there).empty());
}

TEST_CASE("item 10: import is all or nothing: a write that fails part way imports nothing") {
  Kernels k;
  // Order the entries so that only the second one holds a file over the limit.
  if (largest_file(k.entries[0].entry) > largest_file(k.entries[1].entry)) std::swap(k.entries[0], k.entries[1]);
  const size_t first = largest_file(k.entries[0].entry), second = largest_file(k.entries[1].entry);
  REQUIRE(first + 4096 < second);
  cache::write_bundle(k.bundle, k.entries);
  const std::string there = k.scratch / "there";
  const test::CliResult r = moejit_with_file_limit(k.scratch, there, {"cache", "import", k.bundle},
                                                   static_cast<rlim_t>((first + second) / 2));
  INFO(r.output);
  CHECK(r.exit_code == 1);
  CHECK(test::contains(r.output, "nothing was imported"));
  CHECK(k.keys_in(there).empty());  // neither entry, and no temp folder
  // Without the limit, both arrive.
  CHECK(test::moejit(k.scratch, there, {"cache", "import", k.bundle}).exit_code == 0);
  CHECK(k.keys_in(there).size() == 2);
}

TEST_CASE(
    "item 10: import keeps to MOEJIT_CACHE_MAX_BYTES: older entries are evicted, a bundle over the cap is "
    "refused") {
  Kernels k;
  const std::string there = k.scratch / "there";
  cache::DiskStore old_store(there);
  const std::string old_key = cache::sha256_hex("old");
  std::string error;
  REQUIRE(old_store.publish(old_key, test::fake_entry("old", 100000), &error) == cache::PublishStatus::published);
  std::uint64_t bundle_bytes = 0;
  for (const cache::BundleEntry& e : k.entries) bundle_bytes += e.entry.bytes() + e.entry.meta.dump(2).size();

  const test::CliResult over = test::moejit(k.scratch, there, {"cache", "import", k.bundle},
                                            {{"MOEJIT_CACHE_MAX_BYTES", std::to_string(bundle_bytes / 2)}});
  INFO(over.output);
  CHECK(over.exit_code == 1);
  CHECK(test::contains(over.output, "more than the cache's cap MOEJIT_CACHE_MAX_BYTES"));
  CHECK(k.keys_in(there) == std::vector<std::string>{old_key});

  const test::CliResult fits = test::moejit(k.scratch, there, {"cache", "import", k.bundle},
                                            {{"MOEJIT_CACHE_MAX_BYTES", std::to_string(bundle_bytes + 50000)}});
  INFO(fits.output);
  CHECK(fits.exit_code == 0);
  CHECK(test::contains(fits.output, "(2 new, 0 already present, 1 older entries evicted to stay under the cap)"));
  CHECK(k.keys_in(there).size() == 2);
  CHECK(cache::DiskStore(there).load(old_key).status == cache::LoadStatus::absent);
}
