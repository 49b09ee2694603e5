// Table 10 of the seed paper: every field out of range is refused with an
// error that names the field, its value and the allowed range; config files
// and the device profiles (the compute role's geometry:
// test_planner_compute.cpp).
#include <doctest/doctest.h>

#include <cmath>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <string>
#include <utility>

#include "codegen/planner.hpp"

using namespace moejit::codegen;

namespace {
MoeConfig glm(int ranks = 8) {
  MoeConfig c = builtin_model("glm5.2");
  c.ranks = ranks;
  return c;
}

// The ConfigError validate() raises for `c`: its field and message.
std::pair<std::string, std::string> error_of(const MoeConfig& c) {
  try {
    validate(c);
  } catch (const ConfigError& e) {
    return {e.field(), e.what()};
  }
  return {"", "(no error)"};
}

void expect_error(const MoeConfig& c, const std::string& field, const std::string& text) {
  const auto [f, what] = error_of(c);
  CAPTURE(what);
  CHECK(f == field);
  CHECK(what.find(field) != std::string::npos);
  CHECK(what.find(text) != std::string::npos);
}

std::string write_temp(const std::string& name, const std::string& text) {
  const auto path = std::filesystem::temp_directory_path() / ("moejit_test_" + name);
  std::ofstream(path) << text;
  return path.string();
}
}  // namespace

TEST_CASE("the built-in models and a valid configuration") {
  const MoeConfig g = builtin_model("glm5.2");
  CHECK((g.hidden == 6144 && g.intermediate == 2048 && g.experts == 256 && g.top_k == 8));
  CHECK(g.swiglu_clamp == 10.0f);
  CHECK(g.dispatch_sms == 6);
  CHECK(g.token_capacity == 256);
  CHECK(!g.shared_expert);
  CHECK(builtin_model("glm5.2", true).shared_expert == SharedExpert{128});
  const MoeConfig d = builtin_model("dsv4.1-flash", true);
  CHECK((d.hidden == 5120 && d.intermediate == 2304 && d.experts == 384 && d.top_k == 6));
  CHECK(d.shared_expert == SharedExpert{32});
  CHECK_THROWS_WITH_AS(builtin_model("llama"),
                       "unknown model 'llama' (built-in models: glm5.2, dsv4.1-flash, gpt-oss-120b, gpt-oss-20b)",
                       std::invalid_argument);
  CHECK_NOTHROW(validate(glm(8)));
  // gpt-oss: its MoE block as published (MXFP4 experts, H = I = 2880, top-4), no shared expert.
  const MoeConfig o = builtin_model("gpt-oss-120b");
  CHECK((o.hidden == 2880 && o.intermediate == 2880 && o.experts == 128 && o.top_k == 4));
  CHECK((o.activation == Activation::gpt_oss && o.alpha == 1.702f && o.swiglu_clamp == 7.0f));
  CHECK((o.gate_up == GateUp::interleaved && o.biases));
  CHECK(builtin_model("gpt-oss-20b").experts == 32);
  CHECK_NOTHROW(validate(o));
  CHECK_THROWS_WITH_AS(builtin_model("gpt-oss-20b", true), "model 'gpt-oss-20b' has no shared expert",
                       std::invalid_argument);
}

TEST_CASE("Table 10: ranks R") {
  MoeConfig c = glm(0);
  expect_error(c, "ranks", "ranks R = 0 is invalid: must be in [1, 32]");
  c.ranks = 33;
  expect_error(c, "ranks", "ranks R = 33 is invalid: must be in [1, 32]");
}

TEST_CASE("Table 10: experts E (E mod R = 0)") {
  MoeConfig c = glm(8);
  c.experts = 100;
  expect_error(c, "experts", "experts E = 100 is invalid: must be a positive multiple of ranks R = 8");
  c.experts = 0;
  expect_error(c, "experts", "experts E = 0 is invalid");
}

TEST_CASE("Table 10: top_k k (1 <= k <= min(32, E))") {
  MoeConfig c = glm(8);
  c.top_k = 0;
  expect_error(c, "top_k", "top_k k = 0 is invalid: must be in [1, 32]");
  c.top_k = 33;
  expect_error(c, "top_k", "top_k k = 33 is invalid: must be in [1, 32]");
  c.ranks = 1;
  c.experts = 16;
  c.top_k = 17;
  expect_error(c, "top_k", "top_k k = 17 is invalid: must be in [1, 16] (min(32, experts E = 16))");
}

TEST_CASE("Table 10: hidden H (512..8192, multiple of 32)") {
  MoeConfig c = glm(8);
  c.hidden = 520;
  const auto [field, what] = error_of(c);
  CHECK(field == "hidden");
  CHECK(what == "hidden H = 520 is invalid: must be a multiple of 32 in [512, 8192]");
  c.hidden = 2880;  // gpt-oss: 22.5 K128 steps, padded to 3072 inside
  CHECK_NOTHROW(validate(c));
  c.hidden = 544;
  CHECK_NOTHROW(validate(c));
  c.hidden = 384;
  expect_error(c, "hidden", "hidden H = 384 is invalid");
  c.hidden = 8320;
  expect_error(c, "hidden", "hidden H = 8320 is invalid");
}

TEST_CASE("Table 10: intermediate I (256..4096, multiple of 32)") {
  MoeConfig c = glm(8);
  c.intermediate = 300;
  expect_error(c, "intermediate", "intermediate I = 300 is invalid: must be a multiple of 32 in [256, 4096]");
  c.intermediate = 128;
  expect_error(c, "intermediate", "intermediate I = 128 is invalid");
  c.intermediate = 4224;
  expect_error(c, "intermediate", "intermediate I = 4224 is invalid");
}

TEST_CASE("batch B (1..token capacity)") {
  const MoeConfig c = glm(8);
  CHECK_THROWS_WITH_AS(validate_batch(c, 0), "batch B = 0 is invalid: must be in [1, 256] (token_capacity Bcap)",
                       ConfigError);
  CHECK_THROWS_WITH_AS(plan(c, 257, builtin_profile("h200")),
                       "batch B = 257 is invalid: must be in [1, 256] (token_capacity Bcap)", ConfigError);
  try {
    validate_batch(c, 300);
  } catch (const ConfigError& e) {
    CHECK(e.field() == "batch");
  }
}

TEST_CASE("Table 10: compute partition (>= 32 SMs, even, >= l + 1 CTAs)") {
  const MoeConfig c = glm(8);
  // 36 SMs - 6 dispatch = 30 compute.
  LiveDeviceNumbers small{"small", Target{Arch::sm_120a}, 36, 100 * 1024, 99 * 1024, 65536, 1024, 1536, 0};
  CHECK_THROWS_WITH_AS(plan(c, 1, from_live_device(small)),
                       doctest::Contains("compute partition of 30 SMs is below the minimum of 32"), PlanError);
  // An odd partition (alignment 1): 45 - 6 = 39.
  small.sm_count = 45;
  small.gc_granularity = 1;
  CHECK_THROWS_WITH_AS(plan(c, 1, from_live_device(small)), doctest::Contains("compute partition of 39 SMs is odd"),
                       PlanError);
}

TEST_CASE("the fields moejit adds: clamp, shared-expert K-group, dispatch SMs, token capacity") {
  MoeConfig c = glm(8);
  c.swiglu_clamp = -1.0f;
  expect_error(c, "swiglu_clamp", "swiglu_clamp = -1 is invalid: must be a finite number > 0");
  c.swiglu_clamp = std::nanf("");
  expect_error(c, "swiglu_clamp", "is invalid");
  c.swiglu_clamp.reset();
  CHECK_NOTHROW(validate(c));
  c.shared_expert = SharedExpert{64};
  expect_error(c, "shared_expert.k_group", "shared_expert.k_group = 64 is invalid: must be 32 or 128");
  c.shared_expert = SharedExpert{32};
  c.dispatch_sms = 1;
  expect_error(c, "dispatch_sms", "dispatch_sms = 1 is invalid: must be at least 2");
  c.dispatch_sms = 6;
  c.token_capacity = 0;
  expect_error(c, "token_capacity", "token_capacity Bcap = 0 is invalid: must be in [1, 4096]");
  c.token_capacity = 4097;
  expect_error(c, "token_capacity", "token_capacity Bcap = 4097 is invalid");
}

TEST_CASE("config file: a valid file loads, every bad field is named") {
  const std::string good = write_temp("good.json", R"({"name": "tiny", "ranks": 2, "experts": 64, "top_k": 4,
      "hidden": 1024, "intermediate": 512, "recipe": "w4a8-mx", "swiglu_clamp": null,
      "shared_expert": {"k_group": 32}, "token_capacity": 64})");
  const MoeConfig c = load_moe_config(good);
  CHECK(c.name == "tiny");
  CHECK((c.ranks == 2 && c.experts == 64 && c.top_k == 4 && c.hidden == 1024 && c.intermediate == 512));
  CHECK(!c.swiglu_clamp);
  CHECK(c.shared_expert == SharedExpert{32});
  CHECK(c.token_capacity == 64);
  CHECK(c.dispatch_sms == 6);  // default kept
  CHECK(c.recipe == Recipe::w4a8_mx);
  const std::string w4a16 = write_temp("w4a16.json", R"({"experts": 32, "top_k": 4, "hidden": 1024,
      "intermediate": 512, "recipe": "w4a16"})");
  CHECK(load_moe_config(w4a16).recipe == Recipe::w4a16);
  // gpt-oss's block: its activation, alpha, limit and W1 row order, and a hidden size that is not a multiple of 128.
  const std::string gpt_oss = write_temp("gpt-oss.json", R"({"experts": 128, "top_k": 4, "hidden": 2880,
      "intermediate": 2880, "swiglu_clamp": 7.0, "activation": "gpt-oss", "alpha": 1.702, "gate_up": "interleaved"})");
  const MoeConfig g = load_moe_config(gpt_oss);
  CHECK(g.activation == Activation::gpt_oss);
  CHECK(g.alpha == 1.702f);
  CHECK(g.gate_up == GateUp::interleaved);
  nlohmann::json round_trip;
  to_json(round_trip, g);
  MoeConfig back;
  from_json(round_trip, back);
  CHECK(back == g);

  struct Bad {
    const char* text;
    const char* field;
    const char* message;
  };
  const Bad bad[] = {
      {R"({"experts": 256, "top_k": 8, "hidden": 520, "intermediate": 2048})", "hidden",
       "hidden H = 520 is invalid: must be a multiple of 32 in [512, 8192]"},
      {R"({"experts": 256, "top_k": 8, "hiden": 6144, "intermediate": 2048})", "hiden", "unknown field 'hiden'"},
      {R"({"experts": 256, "top_k": 8, "hidden": "6144", "intermediate": 2048})", "hidden",
       "hidden must be an integer, got \"6144\""},
      {R"({"experts": 256, "top_k": 8, "hidden": 6144})", "intermediate", "intermediate is missing"},
      {R"({"experts": 256, "top_k": 8, "hidden": 6144, "intermediate": 2048, "recipe": "nvfp4"})", "recipe",
       "recipe = \"nvfp4\" is invalid: must be \"w4a8-mx\" or \"w4a16\""},
      {R"({"experts": 256, "top_k": 8, "hidden": 6144, "intermediate": 2048, "activation": "gelu"})", "activation",
       "activation = \"gelu\" is invalid: must be \"swiglu\" or \"gpt-oss\""},
      {R"({"experts": 256, "top_k": 8, "hidden": 6144, "intermediate": 2048, "gate_up": "up-first"})", "gate_up",
       "gate_up = \"up-first\" is invalid: must be \"halves\" or \"interleaved\""},
      {R"({"experts": 256, "top_k": 8, "hidden": 6144, "intermediate": 2048, "alpha": -1})", "alpha",
       "alpha = -1 is invalid: must be a finite number > 0"},
      {R"({"experts": 256, "top_k": 8, "hidden": 6144, "intermediate": 2048, "shared_expert": {"k_group": 64}})",
       "shared_expert.k_group", "shared_expert.k_group = 64 is invalid"},
      {R"({"experts": 256, "top_k": 8, "hidden": 6144, "intermediate": 2048, "ranks": 99999999999})", "ranks",
       "does not fit a 32-bit integer"},
      {R"({"experts": 256, "top_k": 8, "hidden": 6144, "intermediate": 2048, "ranks": 3})", "experts",
       "experts E = 256 is invalid: must be a positive multiple of ranks R = 3"},
  };
  for (const Bad& b : bad) {
    const std::string path = write_temp("bad.json", b.text);
    CAPTURE(b.text);
    try {
      load_moe_config(path);
      FAIL("no error");
    } catch (const ConfigError& e) {
      CHECK(e.field() == b.field);
      CHECK(std::string(e.what()).find(path + ": ") == 0);
      CHECK(std::string(e.what()).find(b.message) != std::string::npos);
    }
  }
  CHECK_THROWS_WITH_AS(load_moe_config(write_temp("broken.json", "{")), doctest::Contains("not valid JSON"),
                       std::runtime_error);
  CHECK_THROWS_WITH_AS(load_moe_config("/nonexistent/moejit.json"), doctest::Contains("cannot read config file"),
                       std::runtime_error);
}

TEST_CASE("device profiles: built-ins, live numbers, validation") {
  const DeviceProfile h = builtin_profile("h200");
  CHECK(h.target == Target{Arch::sm_90a});
  CHECK((h.sm_count == 132 && h.smem_per_sm == 228 * 1024 && h.smem_per_block == 227 * 1024));
  CHECK((h.regs_per_sm == 65536 && h.gc_granularity == 8));
  const DeviceProfile r = builtin_profile("rtx-pro-5000");
  CHECK(r.target == Target{Arch::sm_120a});
  CHECK((r.sm_count == 110 && r.smem_per_sm == 100 * 1024 && r.smem_per_block == 99 * 1024));
  CHECK(r.gc_granularity == 2);
  DeviceProfile h100 = builtin_profile("h100");  // H100 SXM5: the H200's SMs
  CHECK(h100.name == "h100");
  h100.name = "h200";
  CHECK(h100 == h);
  CHECK_THROWS_WITH_AS(builtin_profile("a100"), doctest::Contains("built-in profiles: h200, h100, rtx-pro-5000"),
                       std::invalid_argument);

  LiveDeviceNumbers live{"H200", Target{Arch::sm_90a}, 132, 233472, 232448, 65536, 1024, 2048, 0};
  DeviceProfile from_live = from_live_device(live);
  from_live.name = "h200";
  CHECK(from_live == h);
  live.smem_per_block_optin = 300000;
  CHECK_THROWS_WITH_AS(from_live_device(live), doctest::Contains("device.smem_per_block = 300000 is invalid"),
                       ConfigError);
  live.smem_per_block_optin = 232448;
  live.sm_count = 0;
  CHECK_THROWS_WITH_AS(from_live_device(live), "device.sm_count = 0 is invalid: must be > 0", ConfigError);
}
