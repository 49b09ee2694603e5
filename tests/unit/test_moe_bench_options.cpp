// moejit_bench_moe's command line (bench/moe_bench_options.hpp), without a GPU: the sweeps become one layer
// each, in the bench's order, each swept override on its own MoeCodegenOptions field beside the options every
// layer shares; the models; the extras; the refusals that must come before the device is opened.
#include <doctest/doctest.h>

#include <optional>
#include <stdexcept>
#include <string>
#include <vector>

#include "bench/moe_bench_options.hpp"

using namespace moejit;
using bench::MoeBenchOptions;

namespace {
// parse_moe_bench_options over `args` (the program's name first, as argv has it).
std::optional<int> parse(std::vector<std::string> args, MoeBenchOptions& o) {
  args.insert(args.begin(), "moejit_bench_moe");
  std::vector<char*> argv;
  for (std::string& a : args) argv.push_back(a.data());
  return bench::parse_moe_bench_options(int(argv.size()), argv.data(), o);
}
// The same into options of its own: one call's values must not decide the next's.
std::optional<int> parse(std::vector<std::string> args) {
  MoeBenchOptions o;
  return parse(std::move(args), o);
}
}  // namespace

TEST_CASE("moejit_bench_moe without options: three models, B = 1..256, one layer as planned") {
  MoeBenchOptions o;
  REQUIRE_FALSE(parse({}, o).has_value());
  REQUIRE(o.models.size() == 3);
  CHECK(o.models[0].name == "glm5.2");
  CHECK(o.models[1].name == "dsv4.1-flash");
  CHECK(o.models[2].name == "gpt-oss-120b");
  CHECK(o.batches == std::vector<int>{1, 2, 4, 8, 16, 32, 64, 128, 256});
  REQUIRE(o.variants.size() == 1);
  const runtime::MoeLayerOptions l = o.layer_options(o.variants[0]);
  CHECK_FALSE(l.check_routes_on_host);  // the forwards are captured into a graph
  CHECK(l.codegen.ctas_per_sm == 0);
  CHECK(l.codegen.consumer_groups == 0);
  CHECK(l.codegen.activation_warps == 0);
  CHECK_FALSE(l.codegen.schedule.has_value());
  CHECK_FALSE(l.codegen.paired_rows.has_value());
  CHECK_FALSE(l.codegen.token_frame.has_value());
  CHECK_FALSE(l.codegen.warp_tables.has_value());
  CHECK_FALSE(l.codegen.path.has_value());
  CHECK_FALSE(l.pdl.has_value());
  CHECK(l.sm_count == 0);
  CHECK_FALSE(o.trace);
  CHECK(o.leave_out.empty());
}

TEST_CASE("moejit_bench_moe's sweeps: every combination a layer, ctas outermost, tables innermost") {
  MoeBenchOptions o;
  REQUIRE_FALSE(parse({"--ctas-per-sm",
                       "1,2",
                       "--consumer-groups",
                       "2,3",
                       "--schedule",
                       "planned,units",
                       "--activation-warps",
                       "1,3",
                       "--paired-rows",
                       "on,off",
                       "--token-frame",
                       "on,off",
                       "--warp-tables",
                       "planned,on",
                       "--stages",
                       "6",
                       "--tile-n",
                       "16",
                       "--path",
                       "exact",
                       "--decoded-scales",
                       "--no-pdl",
                       "--sm-count",
                       "80"},
                      o)
                    .has_value());
  REQUIRE(o.variants.size() == 128);
  // Variant i's binary digits, outermost first: ctas, groups, schedule, act, paired, frame, tables.
  for (std::size_t i = 0; i < o.variants.size(); ++i) {
    CAPTURE(i);
    const runtime::MoeLayerOptions l = o.layer_options(o.variants[i]);
    CHECK(l.codegen.ctas_per_sm == (i / 64 == 0 ? 1 : 2));
    CHECK(l.codegen.consumer_groups == (i / 32 % 2 == 0 ? 2 : 3));
    CHECK(l.codegen.schedule == (i / 16 % 2 == 0 ? std::nullopt : std::optional(codegen::Schedule::units)));
    CHECK(l.codegen.activation_warps == (i / 8 % 2 == 0 ? 1 : 3));
    CHECK(l.codegen.paired_rows == std::optional(i / 4 % 2 == 0));
    CHECK(l.codegen.token_frame == std::optional(i / 2 % 2 == 0));
    CHECK(l.codegen.warp_tables == (i % 2 == 0 ? std::nullopt : std::optional(true)));
    // What every variant shares.
    CHECK(l.codegen.stages == 6);
    CHECK(l.codegen.tile_n == 16);
    CHECK(l.codegen.path == std::optional(codegen::ComputePath::exact));
    CHECK(l.codegen.decoded_scales);
    CHECK(l.pdl == std::optional(false));
    CHECK(l.sm_count == 80);
  }
}

TEST_CASE("moejit_bench_moe's models: --recipe w4a16 brings BF16 x; --shared-expert fuses it where a model has one") {
  MoeBenchOptions o;
  REQUIRE_FALSE(parse({"--model", "dsv4.1-flash", "--recipe", "w4a16", "--shared-expert", "--quick"}, o).has_value());
  REQUIRE(o.models.size() == 1);
  CHECK(o.models[0].name == "dsv4.1-flash+shared");
  CHECK(o.models[0].config.shared_expert.has_value());
  CHECK(o.models[0].config.recipe == codegen::Recipe::w4a16);
  CHECK(o.codegen.input_bf16);
  CHECK(o.batches == std::vector<int>{1, 8, 64, 256});
  // gpt-oss has none: refused (usage, 2) before any device is opened.
  CHECK(parse({"--model", "gpt-oss-120b", "--shared-expert"}) == std::optional(2));
}

TEST_CASE("moejit_bench_moe's extras: --trace-csv into a directory, --leave-out the roles, --pdl") {
  MoeBenchOptions o;
  REQUIRE_FALSE(parse({"--trace-csv", ".", "--leave-out", "dispatch,finalize", "--pdl"}, o).has_value());
  CHECK(o.trace);
  CHECK(o.trace_dir == ".");
  CHECK(o.leave_out == std::vector<std::string>{"dispatch", "finalize"});
  CHECK(o.layer_options(o.variants.at(0)).pdl == std::optional(true));
}

TEST_CASE("moejit_bench_moe's refusals name the option and its value") {
  CHECK(parse({"--help"}) == std::optional(0));
  CHECK(parse({"--frobnicate"}) == std::optional(2));
  CHECK(parse({"--batches"}) == std::optional(2));  // a value missing
  CHECK_THROWS_WITH_AS(parse({"--schedule", "bogus"}),
                       "--schedule: 'bogus' is not one of planned, stream, units, items", std::invalid_argument);
  CHECK_THROWS_WITH_AS(parse({"--sm-count", "-3"}), "--sm-count: -3 is outside the allowed range [0, 4096]",
                       std::invalid_argument);
  CHECK_THROWS_WITH_AS(parse({"--leave-out", "compute"}), "--leave-out: 'compute' is not one of dispatch, finalize",
                       std::invalid_argument);
  CHECK_THROWS_WITH_AS(parse({"--trace-csv", "/nonexistent/moejit-traces"}),
                       "--trace-csv: '/nonexistent/moejit-traces' is not a directory", std::invalid_argument);
  CHECK_THROWS_WITH_AS(parse({"--batches", "1,300"}), doctest::Contains("batch B = 300 is invalid"),
                       std::invalid_argument);
  CHECK_THROWS_WITH_AS(parse({"--ctas-per-sm", "1,99"}), doctest::Contains("ctas_per_sm = 99"), std::invalid_argument);
}
