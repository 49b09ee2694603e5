// The CLI as a user runs it: precompile (acceptance 1; what it enumerates,
// one sm_90a set for the h200 and h100 profiles alike), and `moejit cache`
// ls, verify, clear, stats, export and import.
#include <doctest/doctest.h>
#include <fmt/format.h>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <limits>
#include <nlohmann/json.hpp>
#include <set>

#include "cache/bundle.hpp"
#include "cache_test_util.hpp"
#include "codegen/moe_config.hpp"
#include "codegen/moe_kernels.hpp"
#include "codegen/smoke_kernel.hpp"
#include "jit/kernel_cache.hpp"
#include "jit/precompile.hpp"
#include "runtime/moe_layer.hpp"
#include "tools/cache_format.hpp"
#include "tools/cli_args.hpp"
#include "tools/precompile.hpp"

using namespace moejit;
using moejit::test::TempDir;

namespace {
test::ProcessResult moejit_cli(const TempDir& scratch, const std::string& cache_dir, std::vector<std::string> args,
                               std::vector<std::pair<std::string, std::string>> env = {}) {
  args.insert(args.begin(), MOEJIT_BINARY);
  env.emplace_back("MOEJIT_CACHE_DIR", cache_dir);
  return test::run_process(args, env, scratch);
}

bool has(const std::string& text, const std::string& needle) {
  return text.find(needle) != std::string::npos;
}
}  // namespace

TEST_CASE("precompile enumerates exactly the distinct kernels the planner yields, each once") {
  jit::PrecompileRequest r;
  r.config = codegen::builtin_model("glm5.2");
  r.batches = tools::parse_batches("1-256");
  r.targets = tools::parse_targets("sm_90a,sm_120a,sm_90a");
  CHECK(r.batches.size() == 256);
  REQUIRE(r.targets.size() == 2);
  const auto specs = jit::kernels_to_precompile(r);

  // Independently: every spec the layer plans for every (profile, batch), as a set.
  std::set<std::string> expected;
  size_t requested = 0;
  for (const char* profile : {"h200", "rtx-pro-5000"})
    for (int b = 1; b <= 256; ++b)
      for (const codegen::KernelSpec& s :
           codegen::moe_kernel_specs(*r.config, b, codegen::builtin_profile(profile), r.options)) {
        expected.insert(nlohmann::json(s).dump());
        ++requested;
      }
  std::set<std::string> got;
  for (const codegen::KernelSpec& s : specs) got.insert(nlohmann::json(s).dump());
  CHECK(got.size() == specs.size());  // no spec twice
  CHECK(got == expected);
  CHECK(specs.size() < requested);  // batch sizes share kernels
  MESSAGE(specs.size() << " distinct kernels for " << requested << " (target, batch, role) requests");
  std::set<std::string> keys;
  for (const codegen::KernelSpec& s : specs) keys.insert(jit::cache_key(s));
  CHECK(keys.size() == specs.size());  // distinct specs never share a key

  // --ranks splits the experts; the local count is what the kernels specialize on.
  r.config = codegen::builtin_model("dsv4.1-flash");
  r.config->ranks = 8;
  r.batches = {1};
  r.targets = {codegen::Target{codegen::Arch::sm_90a}};
  CHECK(jit::kernels_to_precompile(r).front().constant("kExperts") == 384 / 8);
  r.config->ranks = 5;
  CHECK_THROWS_WITH_AS(jit::kernels_to_precompile(r), doctest::Contains("multiple of ranks R = 5"),
                       codegen::ConfigError);
  r.config->ranks = 1;
  r.batches = {300};
  CHECK_THROWS_AS(jit::kernels_to_precompile(r), codegen::ConfigError);
  r.batches = {1};
  r.targets = {codegen::Target{codegen::Arch::sm_100a}};
  CHECK_THROWS_WITH_AS(jit::kernels_to_precompile(r), doctest::Contains("no built-in device profile plans for sm_100a"),
                       codegen::ConfigError);

  // Without a configuration: what codegen emits on its own, per target.
  jit::PrecompileRequest bare;
  bare.batches = {1, 2};
  bare.targets = tools::parse_targets("sm_90a,sm_120a");
  const auto smoke = jit::kernels_to_precompile(bare);
  REQUIRE(smoke.size() == 2);
  CHECK(smoke[0] == codegen::smoke_kernel_spec(codegen::Target{codegen::Arch::sm_90a}));

  CHECK(tools::parse_batches("1-4,2,8") == std::vector<int>{1, 2, 3, 4, 8});
  CHECK(tools::parse_batches("8,3-5,1,4-6,2") == std::vector<int>{1, 2, 3, 4, 5, 6, 8});
  // 20000 copies of the widest range: expanded before deduplicating, that was 5 GB of ints.
  std::string many = "1-65536";
  for (int i = 1; i < 20000; ++i) many += ",1-65536";
  const std::vector<int> all = tools::parse_batches(many);
  CHECK(all.size() == 65536);
  CHECK((all.front() == 1 && all.back() == 65536));
  CHECK_THROWS_WITH_AS(tools::parse_batches("0-4"), doctest::Contains("not a positive integer"), tools::UsageError);
  CHECK_THROWS_WITH_AS(tools::parse_batches("8-4"), doctest::Contains("is empty"), tools::UsageError);
  // A size at INT_MAX overflowed the expansion's counter, which never stopped; any size above the cap is refused.
  for (const char* big : {"2147483647", "65537", "1,65537", "8-2147483647"})
    CHECK_THROWS_WITH_AS(tools::parse_batches(big), doctest::Contains("outside the allowed range [1, 65536]"),
                         tools::UsageError);
  CHECK(tools::parse_batches("65536") == std::vector<int>{65536});
  CHECK_THROWS_WITH_AS(tools::parse_targets("sm_90a,sm_75"), doctest::Contains("'sm_75' is not one of"),
                       tools::UsageError);
}

TEST_CASE("the h100 profile plans the h200's kernels, so one precompile for sm_90a serves both") {
  for (const std::string& model : codegen::builtin_model_names())
    for (codegen::ComputePath path : {codegen::ComputePath::fast, codegen::ComputePath::exact})
      for (int b : {1, 2, 3, 4, 8, 64, 256}) {
        codegen::MoeCodegenOptions o;
        o.path = path;
        const codegen::MoeConfig config = codegen::builtin_model(model);
        const auto on = [&](const char* profile) {
          return nlohmann::json(codegen::moe_kernel_specs(config, b, codegen::builtin_profile(profile), o)).dump();
        };
        CAPTURE(model);
        CAPTURE(b);
        CHECK(on("h100") == on("h200"));
      }
}

TEST_CASE("precompile --config: the file's model, and a bad field named") {
  TempDir scratch;
  test::write_text(scratch / "ok.json",
                   R"({"experts": 64, "top_k": 4, "hidden": 2048, "intermediate": 1024, "ranks": 4})");
  jit::PrecompileRequest r;
  r.config = codegen::load_moe_config(scratch / "ok.json");
  r.batches = {1, 64};
  r.targets = {codegen::Target{codegen::Arch::sm_90a}};
  const auto specs = jit::kernels_to_precompile(r);
  REQUIRE_FALSE(specs.empty());
  CHECK(specs.front().constant("kExperts") == 16);
  CHECK(specs.front().constant("kHidden") == 2048);

  // A shape the planner rejects can never run: an error naming B, the profile and the reason.
  r.config = codegen::builtin_model("glm5.2");
  r.batches = {1};
  r.targets = {codegen::Target{codegen::Arch::sm_120a}};
  r.options.path = codegen::ComputePath::exact;
  CHECK_THROWS_WITH(jit::kernels_to_precompile(r),
                    doctest::Contains("B = 1 cannot be planned on rtx-pro-5000 (sm_120a): rtx-pro-5000 (sm_120a) has "
                                      "no exact compute path"));

  test::write_text(scratch / "bad.json", R"({"experts": 64, "top_k": 4, "hidden": 520, "intermediate": 1024})");
  const test::ProcessResult bad =
      moejit_cli(scratch, scratch / "cache", {"precompile", "--config", scratch / "bad.json", "--targets", "sm_90a"});
  CHECK(bad.exit_code == 1);
  CHECK(has(bad.output, "hidden H = 520 is invalid: must be a multiple of 32 in [512, 8192]"));
}

TEST_CASE("acceptance 1: precompile compiles each kernel once; a second run compiles nothing in under 1 s") {
  TempDir scratch;
  const std::string dir = scratch / "cache";
  const std::vector<std::string> args = {"precompile", "--model", "glm5.2",    "--ranks",       "1",
                                         "--batches",  "1-256",   "--targets", "sm_90a,sm_120a"};
  const test::ProcessResult cold = moejit_cli(scratch, dir, args);
  INFO(cold.output);
  CHECK(cold.exit_code == 0);
  jit::PrecompileRequest r;
  r.config = codegen::builtin_model("glm5.2");
  r.batches = tools::parse_batches("1-256");
  r.targets = tools::parse_targets("sm_90a,sm_120a");
  const size_t n = jit::kernels_to_precompile(r).size();
  const std::string line = fmt::format("distinct kernels  {}\ncompiled          {}\nalready cached    0\n", n, n);
  CHECK(has(cold.output, line));
  CHECK(has(cold.output, fmt::format("compiles={} ", n)));
  CHECK(has(cold.output, fmt::format("[{}/{}] compiled ", n, n)));
  CHECK(has(cold.output, "ETA"));

  const auto t0 = std::chrono::steady_clock::now();
  const test::ProcessResult warm = moejit_cli(scratch, dir, args);
  const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  INFO(warm.output);
  CHECK(warm.exit_code == 0);
  CHECK(has(warm.output, fmt::format("distinct kernels  {}\ncompiled          0\nalready cached    {}\n", n, n)));
  CHECK(has(warm.output, "compiles=0 "));
  MESSAGE("warm precompile took " << seconds << " s");
#if defined(__SANITIZE_ADDRESS__)
  // Instrumented start-up alone (the NVRTC identity probe under ASan's allocator) takes seconds.
  MESSAGE("ASan build: the 1 s bound is asserted in release builds only");
#else
  CHECK(seconds < 1.0);
#endif
}

TEST_CASE("cache ls, verify (and --remove), stats and clear") {
  TempDir scratch;
  const std::string dir = scratch / "cache";
  REQUIRE(moejit_cli(scratch, dir, {"precompile", "--targets", "sm_90a,sm_120a", "--jobs", "1"}).exit_code == 0);

  const test::ProcessResult ls = moejit_cli(scratch, dir, {"cache", "ls"});
  INFO(ls.output);
  CHECK(ls.exit_code == 0);
  CHECK(has(ls.output, "smoke_mxfp4_dequant<kThreads=256> threads=256 min_blocks=1 @ sm_90a"));
  CHECK(has(ls.output, "smoke_mxfp4_dequant<kThreads=256> threads=256 min_blocks=1 @ sm_120a"));
  CHECK(has(ls.output, "2 entries"));

  CHECK(moejit_cli(scratch, dir, {"cache", "verify"}).exit_code == 0);
  const std::string key = jit::cache_key(codegen::smoke_kernel_spec(codegen::Target{codegen::Arch::sm_120a}));
  test::flip_byte(dir + "/v1/" + key + "/kernel.cubin", 64);
  const test::ProcessResult bad = moejit_cli(scratch, dir, {"cache", "verify"});
  INFO(bad.output);
  CHECK(bad.exit_code == 1);
  CHECK(has(bad.output, "BAD  " + key.substr(0, 16) +
                            "  smoke_mxfp4_dequant<kThreads=256> threads=256 min_blocks=1 @ sm_120a: kernel.cubin"));
  CHECK(has(bad.output, "verified 2 entries: 1 ok, 1 bad"));
  const test::ProcessResult removed = moejit_cli(scratch, dir, {"cache", "verify", "--remove"});
  CHECK(has(removed.output, "(removed)"));
  CHECK(moejit_cli(scratch, dir, {"cache", "verify"}).output.find("verified 1 entries: 1 ok, 0 bad") !=
        std::string::npos);

  const test::ProcessResult stats = moejit_cli(scratch, dir, {"cache", "stats"});
  INFO(stats.output);
  CHECK(has(stats.output, "entries    1 "));
  CHECK(has(stats.output, "compiles          2"));

  CHECK(has(moejit_cli(scratch, dir, {"cache", "clear"}).output, "removed 1 entries"));
  CHECK(has(moejit_cli(scratch, dir, {"cache", "ls"}).output, "0 entries"));
  CHECK(test::names_in(dir + "/v1").empty());
  CHECK(moejit_cli(scratch, dir, {"cache", "frobnicate"}).exit_code == 2);
}

TEST_CASE("export and import: a relocatable bundle, verified, refused from another toolkit") {
  TempDir scratch;
  const std::string here = scratch / "here", there = scratch / "there", bundle = scratch / "kernels.moejit";
  const std::vector<std::string> precompile = {"precompile", "--model",   "glm5.2", "--batches",
                                               "8",          "--targets", "sm_90a"};
  REQUIRE(moejit_cli(scratch, here, precompile).exit_code == 0);
  const test::ProcessResult exported = moejit_cli(scratch, here, {"cache", "export", bundle});
  INFO(exported.output);
  // dispatch (the default exact path stages BF16 images of x), compute, finalize and the two transforms
  CHECK(has(exported.output, "exported 5 entries"));

  const test::ProcessResult imported = moejit_cli(scratch, there, {"cache", "import", bundle});
  INFO(imported.output);
  CHECK(imported.exit_code == 0);
  CHECK(has(imported.output, "(5 new, 0 already present)"));
  CHECK(moejit_cli(scratch, there, {"cache", "verify"}).exit_code == 0);
  // The imported cache serves the kernels without compiling, even in strict mode.
  CHECK(has(moejit_cli(scratch, there, precompile).output, "compiles=0 "));
  const test::ProcessResult strict = moejit_cli(scratch, there, {"run", "--model", "glm5.2", "--batch", "8"},
                                                {{"MOEJIT_NO_JIT", "1"}, {"MOEJIT_FORCE_NO_DRIVER", "1"}});
  INFO(strict.output);
  CHECK(strict.exit_code == 0);
  CHECK(has(strict.output, "moe_compute"));
  CHECK(has(strict.output, "(from the cache "));
  CHECK_FALSE(has(strict.output, "(compiled)"));
  CHECK(has(moejit_cli(scratch, there, {"cache", "import", bundle}).output, "(0 new, 5 already present)"));

  SUBCASE("another toolkit's bundle is refused, naming the field") {
    std::vector<cache::BundleEntry> entries = cache::read_bundle(bundle);
    entries[1].entry.meta["identity"]["toolchain"]["nvrtc_build"] = "CL-00000000";
    entries[1].entry.meta["meta_sha256"] = cache::meta_checksum(entries[1].entry.meta);  // as that toolkit sealed it
    cache::write_bundle(bundle, entries);
    const test::ProcessResult refused = moejit_cli(scratch, scratch / "third", {"cache", "import", bundle});
    INFO(refused.output);
    CHECK(refused.exit_code == 1);
    CHECK(has(refused.output, "compiler identity field 'toolchain.nvrtc_build' is \"CL-00000000\" in the bundle"));
    CHECK_FALSE(std::filesystem::exists(scratch / "third/v1"));  // nothing imported
  }
  SUBCASE("a bundle larger than the cap is refused before it is read") {
    // A sparse 4 GiB file: read whole, as import did before checking the cap, it would take 4 GiB of memory.
    const std::string huge = scratch / "huge.moejit";
    { std::ofstream(huge) << test::read_text(bundle).substr(0, 64); }
    std::filesystem::resize_file(huge, std::uint64_t(4) << 30);
    const test::ProcessResult refused =
        moejit_cli(scratch, scratch / "third", {"cache", "import", huge}, {{"MOEJIT_CACHE_MAX_BYTES", "1G"}});
    INFO(refused.output);
    CHECK(refused.exit_code == 1);
    CHECK(has(refused.output, "the bundle is 4.0 GiB, more than the cache's cap MOEJIT_CACHE_MAX_BYTES = 1.0 GiB"));
  }
  SUBCASE("an export that leaves a damaged entry out says so and exits 1, with the rest in the bundle") {
    const std::string key = test::names_in(here + "/v1").front();  // sorted: an entry folder (64 hex digits)
    REQUIRE(key.size() == 64);
    for (const auto& f : std::filesystem::directory_iterator(here + "/v1/" + key))
      if (f.path().filename() != "meta.json") test::flip_byte(f.path().string(), 0);
    const std::string partial = scratch / "partial.moejit";
    const test::ProcessResult r = moejit_cli(scratch, here, {"cache", "export", partial});
    INFO(r.output);
    CHECK(r.exit_code == 1);  // it was 0: the bundle lacked a kernel and nothing said so but a warning
    CHECK(has(r.output, "exported 4 entries"));
    CHECK(has(r.output, "1 damaged entries were left out of the bundle"));
    CHECK(cache::read_bundle(partial).size() == 4);
  }
  SUBCASE("a damaged bundle is refused, the entries before the damage staged and dropped") {
    test::flip_byte(bundle, test::read_text(bundle).size() - 1);  // the last entry's last file
    const test::ProcessResult refused = moejit_cli(scratch, scratch / "third", {"cache", "import", bundle});
    INFO(refused.output);
    CHECK(refused.exit_code == 1);
    CHECK(has(refused.output, "fails its SHA-256 check"));
    const test::ProcessResult ls = moejit_cli(scratch, scratch / "third", {"cache", "ls"});
    CHECK(has(ls.output, "0 entries"));  // nothing imported
    if (std::filesystem::exists(scratch / "third/v1"))
      CHECK(test::names_in(scratch / "third/v1").empty());  // and no temp folder of the entries staged first
  }
}

TEST_CASE("acceptance 4 from the CLI: strict mode fails a miss naming the key and the kernel") {
  TempDir scratch;
  const test::ProcessResult r = moejit_cli(scratch, scratch / "empty", {"run", "--model", "glm5.2", "--batch", "8"},
                                           {{"MOEJIT_NO_JIT", "1"}, {"MOEJIT_FORCE_NO_DRIVER", "1"}});
  INFO(r.output);
  CHECK(r.exit_code == 1);
  // The first kernel `run` asks for (no GPU: planned on the h200 profile).
  const codegen::KernelSpec first =
      codegen::moe_kernel_specs(codegen::builtin_model("glm5.2"), 8, codegen::builtin_profile("h200"), {}).front();
  CHECK(has(r.output, "MOEJIT_NO_JIT=1 forbids compiling, and kernel " + first.summary() + " (key " +
                          jit::cache_key(first) + ") is not in the kernel cache"));
}

TEST_CASE("cache stats formats any compile time stats.json can hold") {
  CHECK(tools::format_seconds(0.42) == "0.42 s");
  CHECK(tools::format_seconds(192) == "3 min 12 s");
  // A hand-written {"compile_millis": 1e300}: the cast to long long was undefined.
  CHECK(tools::format_seconds(1e297) == "1e+297 s");
  CHECK(tools::format_seconds(std::numeric_limits<double>::infinity()) == "inf s");
}
