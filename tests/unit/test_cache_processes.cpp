// Acceptance 2: eight processes that need one missing key at the same moment.
// Exactly one compiles, all eight get the same verified cubin, and nothing
// (temp folder, lock file) is left behind. Also: a disk that fills mid-entry.
#include <doctest/doctest.h>

#include <nlohmann/json.hpp>
#include <thread>

#include "cache/disk_store.hpp"
#include "cache/sha256.hpp"
#include "cache_test_util.hpp"
#include "codegen/smoke_kernel.hpp"
#include "jit/kernel_cache.hpp"

using namespace moejit;
using moejit::test::TempDir;

namespace {
std::vector<nlohmann::json> run_probes(const TempDir& scratch, const std::string& cache_dir, int n,
                                       std::vector<std::string> extra = {}) {
  const std::string go = scratch / "go";
  std::vector<pid_t> pids;
  auto ready = [&](int i) { return scratch / ("ready-" + std::to_string(i)); };
  for (int i = 0; i < n; ++i) {
    std::vector<std::string> argv = {MOEJIT_CACHE_PROBE, "--dir",  cache_dir, "--target", "sm_90a",
                                     "--ready",          ready(i), "--go",    go};
    argv.insert(argv.end(), extra.begin(), extra.end());
    pids.push_back(test::start_process(argv, {}, scratch / ("probe-" + std::to_string(i) + ".out")));
  }
  // Release them together once all have started (and probed the toolchain).
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(60);
  for (int i = 0; i < n; ++i)
    while (!std::filesystem::exists(ready(i)) && std::chrono::steady_clock::now() < deadline)
      std::this_thread::sleep_for(std::chrono::milliseconds(1));
  test::write_text(go, "");
  std::vector<nlohmann::json> out;
  for (int i = 0; i < n; ++i) {
    const int rc = test::wait_exit_code(pids[i]);
    const std::string text = test::read_text(scratch / ("probe-" + std::to_string(i) + ".out"));
    INFO("probe " << i << " output: " << text);
    REQUIRE(rc == 0);
    // The JSON line is the last line; warnings come before it.
    const size_t end = text.find_last_not_of('\n');
    REQUIRE(end != std::string::npos);
    const size_t start = text.rfind('\n', end);
    out.push_back(nlohmann::json::parse(text.substr(start == std::string::npos ? 0 : start + 1)));
  }
  return out;
}
}  // namespace

TEST_CASE("acceptance 2: 8 processes, one missing key: one compile, one cubin, nothing left behind") {
  TempDir scratch;
  const std::string dir = scratch / "cache";
  const std::vector<nlohmann::json> results = run_probes(scratch, dir, 8);

  const std::string key = jit::cache_key(codegen::smoke_kernel_spec(codegen::Target{codegen::Arch::sm_90a}));
  cache::DiskStore disk(dir);
  const cache::Loaded on_disk = disk.load(key);
  REQUIRE(on_disk.status == cache::LoadStatus::hit);  // verified: every hash matches meta.json
  const std::string disk_sha = cache::sha256_hex(on_disk.entry.file("kernel.cubin")->bytes);

  int compiled = 0, from_disk = 0, waited = 0;
  std::uint64_t compiles = 0;
  for (const nlohmann::json& r : results) {
    CAPTURE(r.dump());
    CHECK(r.at("key") == key);
    CHECK(r.at("key_matches") == true);
    CHECK(r.at("cubin_sha256") == disk_sha);
    CHECK(r.at("warnings") == 0);
    compiled += r.at("source") == "compiled";
    from_disk += r.at("source") == "disk";
    compiles += r.at("counters").at("compiles").get<std::uint64_t>();
    waited += r.at("counters").at("lock_waits").get<int>();
  }
  CHECK(compiled == 1);
  CHECK(from_disk == 7);
  CHECK(compiles == 1);
  MESSAGE(waited << " of 7 loaders waited on the lock while the compile ran");
  // The directory holds the entry and the summed counters, and no temp folder or lock.
  CHECK(test::names_in(disk.dir()) == std::vector<std::string>{key, "stats.json"});
  const cache::CounterSnapshot totals = cache::read_stats_file(disk.dir() + "/stats.json");
  CHECK(totals.compiles == 1);
  CHECK(totals.disk_hits == 7);
}

TEST_CASE("a disk that fills up mid-entry: one warning, the kernel from memory, no temp folder left") {
  TempDir scratch;
  const std::string dir = scratch / "cache";
  // 20 KB: the source and meta fit, the PTX and the cubin do not.
  const std::vector<nlohmann::json> results = run_probes(scratch, dir, 1, {"--fsize-limit", "20000"});
  const nlohmann::json& r = results.at(0);
  CAPTURE(r.dump());
  CHECK(r.at("source") == "compiled");
  CHECK(r.at("warnings") == 1);
  CHECK(r.at("disk_writable") == false);
  CHECK(r.at("counters").at("publish_failures") == 1);
  CHECK(test::names_in(dir + "/v1").empty());
}
