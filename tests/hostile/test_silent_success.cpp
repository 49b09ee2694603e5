// Item 9 of issue 15: silent exit 0. `cache clear` that removed nothing said
// "removed 0 entries (361.2 KiB)"; a cache directory that is a regular file
// reported 0 entries; `doctor` never checked that the cache directory is
// usable. Each is now an exit 1 naming the cause.
#include <doctest/doctest.h>

#include "cache/disk_store.hpp"
#include "cache/sha256.hpp"
#include "hostile_util.hpp"

using namespace moejit;
using moejit::test::TempDir;

namespace {
void publish_fakes(const std::string& root, int n) {
  cache::DiskStore disk(root);
  std::string error;
  for (int i = 0; i < n; ++i) {
    const std::string tag = "fake" + std::to_string(i);
    REQUIRE(disk.publish(cache::sha256_hex(tag), test::fake_entry(tag, 5000), &error) ==
            cache::PublishStatus::published);
  }
}
}  // namespace

TEST_CASE("item 9: cache clear that cannot remove the entries exits 1 and counts only what it removed") {
  TempDir scratch;
  const std::string root = scratch / "cache";
  publish_fakes(root, 2);
  test::CliResult r;
  if (::geteuid() == 0) {
    // Root writes anywhere: clear as a user who may read this cache but not write it.
    std::filesystem::permissions(scratch.path(),
                                 std::filesystem::perms::others_read | std::filesystem::perms::others_exec,
                                 std::filesystem::perm_options::add);
    r = test::run_as(test::uid_without_passwd_entry(), {MOEJIT_BINARY, "cache", "clear"}, {{"MOEJIT_CACHE_DIR", root}});
  } else {
    std::filesystem::permissions(root + "/v1", std::filesystem::perms::owner_read | std::filesystem::perms::owner_exec);
    r = test::moejit(scratch, root, {"cache", "clear"});
    std::filesystem::permissions(root + "/v1", std::filesystem::perms::owner_all);
  }
  INFO(r.output);
  CHECK(r.exit_code == 1);
  CHECK(test::contains(r.output, "removed 0 entries (0 B) from " + root + "/v1"));
  CHECK(test::contains(r.output, "could not remove 2 of 2 entries from " + root + "/v1: cannot rename"));
  CHECK(test::contains(r.output, "Permission denied"));
  CHECK(cache::DiskStore(root).list().size() == 2);
}

TEST_CASE("item 9: a cache directory that is a regular file is an error, never \"0 entries\"") {
  TempDir scratch;
  const std::string root = scratch / "not-a-dir";
  test::write_text(root, "a regular file");
  for (const std::vector<std::string>& args : {std::vector<std::string>{"cache", "ls"},
                                               {"cache", "verify"},
                                               {"cache", "stats"},
                                               {"cache", "clear"},
                                               {"cache", "export", scratch / "out.moejit"}}) {
    const test::CliResult r = test::moejit(scratch, root, args);
    INFO(args[1], ": ", r.output);
    CHECK(r.exit_code == 1);
    CHECK(test::contains(r.output, "cannot read the kernel cache: " + root + " is a regular file, not a directory"));
    CHECK_FALSE(test::contains(r.output, "0 entries"));
  }
}

TEST_CASE("item 9: doctor checks that the cache directory can be used, and exits 1 when it cannot") {
  TempDir scratch;
  const std::vector<std::pair<std::string, std::string>> no_gpu = {{"MOEJIT_FORCE_NO_DRIVER", "1"}};
  auto doctor = [&](const std::string& dir) { return test::moejit(scratch, dir, {"doctor"}, no_gpu); };

  test::write_text(scratch / "file", "x");
  const test::CliResult file = doctor(scratch / "file");
  INFO(file.output);
  CHECK(file.exit_code == 1);
  CHECK(test::contains(file.output, "cache dir   " + scratch / "file" + " (PROBLEM: " + scratch / "file" +
                                        " is a regular file, not a directory)"));

  const test::CliResult fresh = doctor(scratch / "fresh/cache");
  CHECK(fresh.exit_code == 0);
  CHECK(test::contains(fresh.output, "(not created yet; it will be made inside " + scratch.path() + ")"));
  CHECK_FALSE(std::filesystem::exists(scratch / "fresh"));  // doctor creates nothing

  publish_fakes(scratch / "used", 1);
  std::filesystem::permissions(scratch / "used/v1", std::filesystem::perms::all);
  const test::CliResult used = doctor(scratch / "used");
  INFO(used.output);
  CHECK(used.exit_code == 0);
  CHECK(test::contains(used.output, "(writable, 1 entries)"));
  CHECK(test::contains(used.output, "warning: " + scratch / "used/v1" + " is writable by every user (mode 777)"));
  CHECK(test::names_in(scratch / "used/v1").size() == 1);  // the probe file is gone

  // The environment every other command refuses (run and precompile fail on it): doctor said all was well.
  std::vector<std::pair<std::string, std::string>> bad_env = no_gpu;
  bad_env.emplace_back("MOEJIT_NO_JIT", "maybe");
  const test::CliResult env = test::moejit(scratch, scratch / "used", {"doctor"}, bad_env);
  INFO(env.output);
  CHECK(env.exit_code == 1);
  CHECK(test::contains(env.output, "cache env   PROBLEM: "));
  CHECK(test::contains(env.output, "MOEJIT_NO_JIT"));
}
