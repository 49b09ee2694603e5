// What a review of the CLI found on 2026-12-05, each as the user met it: an argument that no option takes was
// ignored (`moejit run dsv4.1-flash` ran glm5.2 and exited 0); an integer too large for its option was "not an
// integer"; one batch size that an option cannot run stopped a whole `plan` sweep; precompile's default batch
// range ignored the configuration's token capacity; `inspect --ptx` read a folder as an empty file, and its
// --dump-dir failed only after the compile, or overwrote the PTX it had read. Each is now refused up front,
// exit 2, naming the argument.
#include <doctest/doctest.h>
#include <sys/stat.h>

#include <filesystem>

#include "hostile_util.hpp"

using namespace moejit;
using moejit::test::TempDir;

namespace {
const char* const k_fixture = MOEJIT_SOURCE_DIR "/tests/ptx/fixtures/user_tma.ptx";

// `moejit plan` of GLM5.2 B = `batch` on one H200 with `extra` flags.
test::CliResult glm_plan(const TempDir& scratch, int batch, const std::vector<std::string>& extra) {
  std::vector<std::string> args = {
      "plan", "--model", "glm5.2", "--ranks", "1", "--device", "h200", "--batch", std::to_string(batch)};
  args.insert(args.end(), extra.begin(), extra.end());
  return test::moejit(scratch, scratch / "c", args);
}
}  // namespace

TEST_CASE("cli: an argument that no option takes is refused, never ignored") {
  TempDir scratch;
  for (const std::vector<std::string>& args :
       {std::vector<std::string>{"run", "dsv4.1-flash", "--batch", "1"},
        {"inspect", "--kernel", "smoke", "--target", "sm_90a", "stray"},
        {"doctor", "stray"},
        {"plan", "--model", "glm5.2", "--ranks", "1", "--batch", "1", "--device", "h200", "stray"}}) {
    const test::CliResult r = test::moejit(scratch, scratch / "c", args, {{"MOEJIT_FORCE_NO_DRIVER", "1"}});
    INFO(args[0], ": ", r.output);
    CHECK(r.exit_code == 2);
    CHECK(test::contains(r.output, "moejit " + args[0] + ": unexpected argument '" +
                                       (args[0] == "run" ? "dsv4.1-flash" : "stray") + "' (see --help)"));
    CHECK(!test::contains(r.output, "[1/3] plan"));  // nothing was planned or compiled
  }
  // -h is --help, not an argument: the usage and exit 0.
  const test::CliResult help = test::moejit(scratch, scratch / "c", {"run", "-h"});
  CHECK(help.exit_code == 0);
  CHECK(test::contains(help.output, "usage: moejit run [options]"));
}

TEST_CASE("cli: an integer beyond its option's range is out of range, not \"not an integer\"") {
  TempDir scratch;
  const test::CliResult r = test::moejit(scratch, scratch / "c", {"run", "--seed", "18446744073709551615"},
                                         {{"MOEJIT_FORCE_NO_DRIVER", "1"}});
  INFO(r.output);
  CHECK(r.exit_code == 2);
  CHECK(test::contains(r.output, "--seed: 18446744073709551615 is outside the allowed range [0, "));
}

TEST_CASE("cli: a plan sweep reports the batch sizes an option cannot run as rejected columns") {
  TempDir scratch;
  const test::CliResult r = test::moejit(
      scratch, scratch / "c",
      {"plan", "--model", "glm5.2", "--ranks", "1", "--device", "h200", "--batches", "1-8", "--schedule", "units"});
  INFO(r.output);
  CHECK(r.exit_code == 1);  // a shape that cannot run (plan --help)
  CHECK(test::contains(r.output, "B = 8 launch rejected: schedule = units is invalid at B = 8"));
  const test::CliResult json = test::moejit(scratch, scratch / "c",
                                            {"plan", "--model", "glm5.2", "--ranks", "1", "--device", "h200",
                                             "--batches", "1-8", "--schedule", "units", "--json"});
  CHECK(json.exit_code == 1);
  CHECK(test::contains(json.output, "\"batch\": 4"));  // the plannable columns are still printed
  CHECK(test::contains(json.output, "schedule = units is invalid at B = 8"));

  const test::CliResult split = test::moejit(
      scratch, scratch / "c",
      {"plan", "--model", "glm5.2", "--ranks", "8", "--device", "h200", "--batch", "8", "--dispatch-sms", "132"});
  CHECK(split.exit_code == 2);
  CHECK(test::contains(split.output, "--dispatch-sms: 132 is outside the allowed range [2, 131]"));
}

TEST_CASE("cli: --paired-rows takes on or off, and on where rows cannot pair is a rejected column naming it") {
  TempDir scratch;
  const test::CliResult r = glm_plan(scratch, 64, {"--paired-rows", "yes"});
  INFO(r.output);
  CHECK(r.exit_code == 2);
  CHECK(test::contains(r.output, "--paired-rows: 'yes' is not one of on, off"));
  const test::CliResult e = glm_plan(scratch, 64, {"--path", "exact", "--paired-rows", "on"});
  INFO(e.output);
  CHECK(e.exit_code == 1);
  CHECK(test::contains(e.output, "B = 64 launch rejected: paired_rows = on is invalid on the sm90-bf16-mma atom"));
  const test::CliResult ok = glm_plan(scratch, 64, {"--paired-rows", "on"});
  INFO(ok.output);
  CHECK(ok.exit_code == 0);
  CHECK(test::contains(ok.output, "GEMM1 rows paired in segments of at most 4 rows (set by the options)"));
}

TEST_CASE("cli: --warp-tables takes on or off, and on where the routes do not fit a warp is a rejected column") {
  TempDir scratch;
  const test::CliResult r = glm_plan(scratch, 2, {"--warp-tables", "yes"});
  INFO(r.output);
  CHECK(r.exit_code == 2);
  CHECK(test::contains(r.output, "--warp-tables: 'yes' is not one of on, off"));
  const test::CliResult e = glm_plan(scratch, 8, {"--warp-tables", "on"});
  INFO(e.output);
  CHECK(e.exit_code == 1);
  CHECK(test::contains(e.output, "B = 8 launch rejected: warp_tables = on is invalid here: 64 schedule routes > 32"));
  const test::CliResult off = glm_plan(scratch, 2, {"--warp-tables", "off"});
  INFO(off.output);
  CHECK(off.exit_code == 0);
  CHECK(test::contains(off.output, "routing tables by the block: warp_tables = off set by the options"));
  const test::CliResult planned = glm_plan(scratch, 2, {});
  INFO(planned.output);
  CHECK(test::contains(planned.output, "routing tables by one warp: 16 schedule routes, a lane each"));
}

TEST_CASE("cli: --token-frame takes on or off, and on where it cannot run is a rejected column naming it") {
  TempDir scratch;
  const test::CliResult r = glm_plan(scratch, 64, {"--token-frame", "maybe"});
  INFO(r.output);
  CHECK(r.exit_code == 2);
  CHECK(test::contains(r.output, "--token-frame: 'maybe' is not one of on, off"));
  const test::CliResult e = glm_plan(scratch, 64, {"--path", "exact", "--token-frame", "on"});
  INFO(e.output);
  CHECK(e.exit_code == 1);
  CHECK(test::contains(e.output,
                       "B = 64 launch rejected: token_frame = on is invalid here: the atom stages no split rows"));
  const test::CliResult off = glm_plan(scratch, 64, {"--token-frame", "off"});
  INFO(off.output);
  CHECK(off.exit_code == 0);
  CHECK(test::contains(off.output, "activation frame: MX block (token_frame = off set by the options)"));
}

TEST_CASE("cli: precompile's batch range is the configuration's token capacity") {
  TempDir scratch;
  const std::string config = scratch / "cap64.json";
  test::write_text(config, R"({"experts": 32, "top_k": 4, "hidden": 512, "intermediate": 256, "token_capacity": 64})");
  const test::CliResult over = test::moejit(
      scratch, scratch / "c", {"precompile", "--targets", "sm_90a", "--config", config, "--batches", "65"});
  INFO(over.output);
  CHECK(over.exit_code == 2);
  CHECK(test::contains(over.output, "--batches: B = 65 exceeds the configuration's token capacity (allowed: 1-64)"));
  const test::CliResult builtin = test::moejit(
      scratch, scratch / "c", {"precompile", "--targets", "sm_90a", "--model", "glm5.2", "--batches", "1-257"});
  CHECK(builtin.exit_code == 2);
  CHECK(
      test::contains(builtin.output, "--batches: B = 257 exceeds the configuration's token capacity (allowed: 1-256)"));
}

TEST_CASE("cli: inspect names an unreadable --ptx and an unusable --dump-dir before compiling, and keeps its input") {
  TempDir scratch;
  const test::CliResult folder =
      test::moejit(scratch, scratch / "c", {"inspect", "--ptx", scratch.path(), "--target", "sm_90a"});
  INFO(folder.output);
  CHECK(folder.exit_code == 2);
  CHECK(test::contains(folder.output, "--ptx: cannot read '" + scratch.path() + "': Is a directory"));

  const std::string file = scratch / "a-file";
  test::write_text(file, "not a folder");
  const test::CliResult dump = test::moejit(
      scratch, scratch / "c", {"inspect", "--kernel", "smoke", "--target", "sm_90a", "--dump-dir", file + "/sub"});
  INFO(dump.output);
  CHECK(dump.exit_code == 2);
  CHECK(test::contains(dump.output, "--dump-dir: cannot use '" + file + "/sub' as a folder"));
  CHECK(!test::contains(dump.output, "== pass"));  // refused before the build

  // The PTX read from the dump folder under a name the dump writes: refused, the file untouched.
  const std::filesystem::path dir = scratch / "d";
  std::filesystem::create_directories(dir);
  const std::string input = (dir / "final.ptx").string();
  const std::string module = test::read_text(k_fixture);
  test::write_text(input, module);
  const test::CliResult keep = test::moejit(scratch, scratch / "c",
                                            {"inspect", "--ptx", input, "--target", "sm_90a", "--tensormap", "tmap_w",
                                             "--tensormap", "tmap_x", "--maxnreg", "40", "--dump-dir", dir.string()});
  INFO(keep.output);
  CHECK(keep.exit_code == 2);
  CHECK(test::contains(keep.output, "would overwrite the input '" + input + "'; dump into another folder"));
  CHECK(test::read_text(input) == module);
}

TEST_CASE("cli: inspect refuses an option of another mode before anything, and makes no --dump-dir for a refusal") {
  TempDir scratch;
  struct Case {
    std::vector<std::string> args;
    std::string expected;
  };
  // Each was ignored: `--model ... --require` validated nothing, and exited 0.
  const Case cases[] = {
      {{"--model", "glm5.2", "--target", "sm_90a", "--require", "mma.sync", "--entry", "x"}, "--require is for --ptx"},
      {{"--kernel", "smoke", "--target", "sm_90a", "--path", "exact"}, "--path is for --model"},
      {{"--kernel", "smoke", "--target", "sm_90a", "--ranks", "4"}, "--ranks is for --model"},
      {{"--ptx", "x.ptx", "--target", "sm_90a", "--tile-n", "64"}, "--tile-n is for --model"},
      {{"--target", "sm_90a"}, "give exactly one of --kernel NAME"},
      {{"--ptx", "x.ptx", "--target", "sm_90a", "--tensormap", "t", "--tensormap", "t:2"},
       "--tensormap: formal 't' is given twice"},
      {{"--ptx", "x.ptx", "--target", "sm_90a", "--tensormap", "t:0"},
       "USES = 0 is outside the allowed range [1, 9999]"},
  };
  for (const Case& c : cases) {
    std::vector<std::string> args = {"inspect", "--dump-dir", scratch / "dump"};
    args.insert(args.end(), c.args.begin(), c.args.end());
    const test::CliResult r = test::moejit(scratch, scratch / "c", args);
    INFO(r.output);
    CHECK(r.exit_code == 2);
    CHECK(test::contains(r.output, c.expected));
    CHECK_FALSE(std::filesystem::exists(scratch / "dump"));
  }
}

TEST_CASE("cli: precompile without a model refuses the layer options it would ignore, before compiling") {
  TempDir scratch;
  // Without --model/--config it compiles codegen's own kernels: each of these was dropped, and it exited 0.
  for (const std::vector<std::string>& extra :
       {std::vector<std::string>{"--path", "exact"}, {"--batches", "8"}, {"--tile-n", "16"}, {"--recipe", "w4a16"}}) {
    std::vector<std::string> args = {"precompile", "--targets", "sm_90a"};
    args.insert(args.end(), extra.begin(), extra.end());
    const test::CliResult r = test::moejit(scratch, scratch / "c", args);
    INFO(r.output);
    CHECK(r.exit_code == 2);
    CHECK(test::contains(r.output, extra[0] + " needs --model or --config"));
    CHECK_FALSE(std::filesystem::exists(scratch / "c"));  // nothing compiled
  }
}

TEST_CASE("cli: inspect --dump-dir replaces a link or FIFO left under a stage's name, never writes through it") {
  TempDir scratch;
  const std::filesystem::path dir = scratch / "shared-dump";
  std::filesystem::create_directories(dir);
  const std::string victim = scratch / "victim";
  test::write_text(victim, "the user's file");
  std::filesystem::create_symlink(victim, dir / "final.ptx");  // another user's link: the dump truncated its target
  REQUIRE(::mkfifo((dir / "source.cu").c_str(), 0644) == 0);   // and a FIFO hung the dump
  const test::CliResult r =
      test::moejit(scratch, scratch / "c",
                   {"inspect", "--kernel", "smoke", "--target", "sm_90a", "--dump-dir", dir.string()}, {}, 60);
  INFO(r.output);
  CHECK(r.exit_code == 0);
  CHECK(test::read_text(victim) == "the user's file");
  CHECK(std::filesystem::is_regular_file(std::filesystem::symlink_status(dir / "final.ptx")));
  CHECK(std::filesystem::is_regular_file(std::filesystem::symlink_status(dir / "source.cu")));
  CHECK(test::contains(test::read_text((dir / "final.ptx").string()), ".entry"));
}

TEST_CASE("cli: a --ranks that does not divide the experts is a usage error naming --ranks, in every command") {
  TempDir scratch;
  // plan and precompile reported it as a failure of the model (exit 1), inspect as the option's.
  for (const std::vector<std::string>& args :
       {std::vector<std::string>{"plan", "--model", "glm5.2", "--ranks", "3", "--batch", "8", "--device", "h200"},
        {"precompile", "--model", "glm5.2", "--ranks", "3", "--batches", "8", "--targets", "sm_90a"},
        {"inspect", "--model", "glm5.2", "--ranks", "3", "--target", "sm_90a"}}) {
    const test::CliResult r = test::moejit(scratch, scratch / "c", args);
    INFO(r.output);
    CHECK(r.exit_code == 2);
    CHECK(test::contains(r.output, "--ranks: experts E = 256 is invalid: must be a positive multiple of ranks R = 3"));
  }
}
