// Item 3 of issue 15, the default directory: with HOME unset and no passwd
// entry (a container with an arbitrary uid) moejit used the world-writable
// /tmp/.cache/moejit, where any local user could plant kernels. Now there is
// no cache directory: the library keeps kernels in memory and says so once,
// and the commands whose job is the disk cache exit 1 naming the cause.
#include <doctest/doctest.h>

#include "cache/cache.hpp"
#include "cache/cache_dir.hpp"
#include "cache/sha256.hpp"
#include "hostile_util.hpp"

using namespace moejit;
using moejit::test::TempDir;

TEST_CASE("item 3: without HOME or a passwd entry there is no cache directory, never /tmp") {
  cache::CacheDirInputs in;
  in.uid = 54321;
  std::string why;
  CHECK(cache::choose_cache_dir(in, &why).empty());
  CHECK(why == "HOME is unset and uid 54321 has no passwd entry");
  in.home = "relative/home";
  in.xdg_cache_home = "relative/xdg";  // the XDG spec: a relative path is ignored
  CHECK(cache::choose_cache_dir(in, &why).empty());
  CHECK(why == "HOME is not an absolute path and uid 54321 has no passwd entry");
  in.passwd_home = "/home/u";
  CHECK(cache::choose_cache_dir(in) == "/home/u/.cache/moejit");
  in.home = "/h";
  CHECK(cache::choose_cache_dir(in) == "/h/.cache/moejit");
  in.xdg_cache_home = "/x";
  CHECK(cache::choose_cache_dir(in) == "/x/moejit");
  in.moejit_cache_dir = "/m";
  CHECK(cache::choose_cache_dir(in) == "/m");

  // The library: kernels in memory, one warning that names the cause and the fix.
  std::vector<std::string> warnings;
  cache::Config config = test::quiet_config("", &warnings);
  config.no_dir_reason = "HOME is unset and uid 54321 has no passwd entry";
  cache::Cache c(config);
  int builds = 0;
  for (int i = 0; i < 2; ++i)
    CHECK(c.resolve(cache::sha256_hex("k"), "fake", [&] { return ++builds, test::fake_entry("k"); }).source ==
          cache::Source::compiled);
  CHECK_FALSE(c.disk_writable());
  REQUIRE(warnings.size() == 1);
  CHECK(test::contains(warnings[0], "no kernel cache directory (HOME is unset and uid 54321 has no passwd entry)"));
  CHECK(test::contains(warnings[0], "set MOEJIT_CACHE_DIR"));
}

TEST_CASE("item 3: the CLI as a uid without a passwd entry and without HOME") {
  if (::geteuid() != 0) {
    MESSAGE("not root: cannot run as another uid here; the choice itself is checked above");
    return;
  }
  const unsigned uid = test::uid_without_passwd_entry();
  for (const std::vector<std::string>& args :
       {std::vector<std::string>{MOEJIT_BINARY, "cache", "ls"},
        std::vector<std::string>{MOEJIT_BINARY, "precompile", "--targets", "sm_90a"}}) {
    const test::CliResult r = test::run_as(uid, args);
    INFO(r.output);
    CHECK(r.exit_code == 1);
    CHECK(test::contains(r.output, "no kernel cache directory: HOME is unset and uid " + std::to_string(uid) +
                                       " has no passwd entry; set MOEJIT_CACHE_DIR"));
    CHECK_FALSE(test::contains(r.output, "/tmp/.cache"));
  }
}
