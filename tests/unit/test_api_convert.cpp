// The public API's types against the library's (api/convert.hpp): the public
// header duplicates each field by design (it names no internal type), so a
// default or a field that drifts must fail here, not in an engine.
#include <doctest/doctest.h>

#include <string>
#include <tuple>
#include <utility>

#include <nlohmann/json.hpp>

#include "api/convert.hpp"

namespace moejit {
namespace {

TEST_CASE("api: the public Config's defaults are the library's") {
  CHECK(api::to_internal(Config{}) == codegen::MoeConfig{});
  CHECK(api::to_public(codegen::MoeConfig{}).swiglu_clamp == Config{}.swiglu_clamp);
}

TEST_CASE("api: every config field survives the round trip, every built-in model and a config setting each") {
  std::vector<codegen::MoeConfig> configs;
  for (const std::string& name : codegen::builtin_model_names()) {
    configs.push_back(codegen::builtin_model(name));
    if (name.rfind("gpt-oss", 0) != 0) configs.push_back(codegen::builtin_model(name, true));  // gpt-oss has none
  }
  codegen::MoeConfig every;  // each field off its default
  every.name = "every-field";
  every.ranks = 4;
  every.experts = 64;
  every.top_k = 6;
  every.hidden = 2048;
  every.intermediate = 768;
  every.swiglu_clamp = std::nullopt;
  every.activation = codegen::Activation::gpt_oss;
  every.alpha = 1.5f;
  every.gate_up = codegen::GateUp::interleaved;
  every.biases = true;
  every.shared_expert = codegen::SharedExpert{32};
  every.dispatch_sms = 9;
  every.token_capacity = 128;
  every.batched_routes = false;
  configs.push_back(every);
  for (const codegen::MoeConfig& c : configs) {
    INFO(nlohmann::json(c).dump());
    CHECK(api::to_internal(api::to_public(c)) == c);
  }
  // The JSON form, too: the public struct holds every key the library writes.
  CHECK(nlohmann::json(api::to_internal(api::to_public(every))) == nlohmann::json(every));
}

TEST_CASE("api: options map onto the codegen and layer options; a bad path is refused by field") {
  LayerOptions o;
  CHECK(api::codegen_options(o) == codegen::MoeCodegenOptions{});
  o.path = "fast";
  o.input_bf16 = true;
  o.tile_n = 16;
  o.stages = 4;
  o.ctas_per_sm = 2;
  o.schedule = "stream";
  o.ep_mode = "mirror+direct-scan";
  o.dispatch_sms = 8;
  o.device = 1;
  o.check_routes_on_host = true;
  o.pdl = true;
  o.use_graphs = false;
  const runtime::MoeLayerOptions l = api::layer_options(o);
  CHECK(l.codegen.path == codegen::ComputePath::fast);
  CHECK(l.codegen.input_bf16);
  CHECK(l.codegen.tile_n == 16);
  CHECK(l.codegen.stages == 4);
  CHECK(l.codegen.ctas_per_sm == 2);
  CHECK(l.codegen.schedule == codegen::Schedule::stream);
  CHECK(l.codegen.ep_mode == (contract::kEpMirror | contract::kEpDirectScan));
  CHECK(l.codegen.dispatch_sms == 8);
  CHECK(l.device == 1);
  CHECK(l.check_routes_on_host);
  CHECK(l.pdl == true);
  o.pdl = false;
  CHECK(api::layer_options(o).pdl == false);
  o.pdl.reset();
  CHECK_FALSE(api::layer_options(o).pdl.has_value());  // as planned
  CHECK_FALSE(l.use_graphs);
  // The field and the message of the error codegen_options(o) refuses o with.
  auto refused = [](const LayerOptions& bad) -> std::pair<std::string, std::string> {
    try {
      (void)api::codegen_options(bad);
    } catch (const Error& e) {
      return {e.field(), e.what()};
    }
    return {"", "accepted"};
  };
  o.path = "turbo";
  auto [field, what] = refused(o);
  CHECK(field == "path");
  CHECK(what.find("'turbo'") != std::string::npos);
  o.path = "exact";
  o.schedule = "rounds";
  std::tie(field, what) = refused(o);
  CHECK(field == "schedule");
  CHECK(what == std::string("schedule = 'rounds' is invalid: must be stream, units, items or empty (as planned)"));
  o.schedule = "units";
  CHECK(api::codegen_options(o).schedule == codegen::Schedule::units);
  o.schedule.clear();
  CHECK_FALSE(api::codegen_options(o).schedule);
  o.ep_mode = "relay";
  std::tie(field, what) = refused(o);
  CHECK(field == "ep_mode");
  CHECK(what.find("ep_mode = 'relay' is invalid") != std::string::npos);
  o.ep_mode.clear();
  o.tile_n = 12;
  CHECK_THROWS_AS(api::guarded([&] { return api::codegen_options(o); }), Error);
}

TEST_CASE("api: guarded() keeps a refused input's field and wraps the rest with none") {
  try {
    api::guarded([] { codegen::validate_batch(codegen::builtin_model("glm5.2"), 0); });
    FAIL("B = 0 was accepted");
  } catch (const Error& e) {
    CHECK(e.field() == "batch");
  }
  try {
    api::guarded([]() -> int { throw std::runtime_error("disk full"); });
    FAIL("no exception");
  } catch (const Error& e) {
    CHECK(e.field().empty());
    CHECK(std::string(e.what()) == "disk full");
  }
}

TEST_CASE("api: the public plan is the launch plan, field by field") {
  const codegen::MoeLaunchPlan p =
      codegen::plan_launch(codegen::builtin_model("glm5.2"), 8, codegen::builtin_profile("h200"), {});
  const Plan q = api::to_public(p);
  CHECK(q.batch == 8);
  CHECK(q.path == codegen::path_name(*p.options.path));
  CHECK(q.tile_n == p.tile_n);
  CHECK(q.stages == p.stages);
  CHECK(q.schedule == "stream");
  CHECK(api::to_public(codegen::plan_launch(codegen::builtin_model("glm5.2"), 1, codegen::builtin_profile("h200"), {}))
            .schedule == "units");  // planned at B = 1
  CHECK_FALSE(q.pdl);
  CHECK(api::to_public(codegen::plan_launch(codegen::builtin_model("glm5.2"), 2, codegen::builtin_profile("h200"), {}))
            .pdl);  // planned up to B = 4
  CHECK(q.ep_mode == "none");
  const codegen::MoeLaunchPlan ep = codegen::plan_launch(codegen::MoeConfig{[] {
                                                           codegen::MoeConfig c = codegen::builtin_model("glm5.2");
                                                           c.ranks = 4;
                                                           return c;
                                                         }()},
                                                         8, codegen::builtin_profile("h200"), {});
  CHECK(api::to_public(ep).ep_mode == "pull+staged-returns");
  CHECK(api::to_public(ep).dispatch_sms == ep.ep.dispatch_sms);
  for (auto [pub, lib] : {std::pair{q.dispatch, p.dispatch}, {q.compute, p.compute}, {q.finalize, p.finalize}}) {
    CHECK(pub.launched == lib.launched);
    CHECK(pub.grid == lib.grid);
    CHECK(pub.threads == lib.threads);
    CHECK(pub.smem_bytes == lib.smem_bytes);
    CHECK(pub.blocks_per_sm == lib.blocks_per_sm);
    CHECK(pub.register_cap == lib.register_cap);
  }
  CHECK(q.workspace_bytes == p.workspace_bytes);
  CHECK(nlohmann::json::parse(q.json) == nlohmann::json(p));
}

}  // namespace
}  // namespace moejit
