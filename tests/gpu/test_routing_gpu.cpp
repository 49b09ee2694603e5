// Route ids a router should never send, on the GPU against the CPU reference:
// ids outside [0, E) (negative, E itself, INT_MAX), an expert repeated within
// a token (up to all k routes of a token, more routes on one expert than B),
// and 32 distinct experts in one step (the most routes the unit
// one-warp routing tables take, planned at B <= 4; 40 take the block-wide
// ones). A token with an id outside [0, E) must come out NaN in every
// element, every other token as the reference computes it, whichever schedule
// runs and whoever builds the routing tables.
#include <doctest/doctest.h>

#include <climits>
#include <optional>
#include <string>

#include "gpu_test_util.hpp"

using namespace moejit;

namespace {
struct Step {
  std::string name;
  std::vector<std::int32_t> ids;  // [B][k]
};

// k = 8 over E = 40: tokens 0 and 3 poisoned; token 1 repeats experts; token 2 ordinary.
std::vector<Step> hostile_steps(int E) {
  std::vector<Step> steps;
  steps.push_back(
      {"ids outside [0, E), repeats", {-1, 3,  7,  E,       9,  11, 13, 15,     // poisoned: -1 and E
                                       3,  3,  5,  5,       5,  8,  20, 39,     // expert 3 twice, 5 three times
                                       0,  1,  2,  4,       6,  10, 12, 14,     // ordinary
                                       17, 19, 21, INT_MAX, 23, 25, 27, 29}});  // poisoned: INT_MAX
  Step distinct{"32 distinct experts", {}};
  for (int r = 0; r < 32; ++r) distinct.ids.push_back((r * 7) % E);  // 7 is coprime to 40: 32 distinct
  steps.push_back(distinct);
  Step wide{"40 routes, one id INT_MIN", {}};
  for (int r = 0; r < 40; ++r) wide.ids.push_back(r == 13 ? INT_MIN : (r * 3) % E);
  steps.push_back(wide);
  // More routes on one expert than tokens: B = 1 and 3 pair every GEMM1 segment (contract::kPairedAll), whose
  // token tiles then hold kPairedRows rows each (a kernel that tiled by 8 trapped on a 5-row segment).
  steps.push_back({"one token's 8 routes on one expert", {5, 5, 5, 5, 5, 5, 5, 5}});
  steps.push_back({"13 routes of 3 tokens on one expert", {7, 7, 7,  7,  7,  7,  7,  7,  //
                                                           7, 7, 7,  7,  1,  2,  3,  4,  //
                                                           7, 9, 11, 13, 15, 17, 19, 21}});
  return steps;
}

// The finalize role writes a poisoned token as the quiet NaN 0x7FC0 (the reference's too), distinct from the
// 0xFFFF the test fills y with first, so a kernel that skips the token is caught.
bool poisoned_row(const std::vector<std::uint16_t>& y, int t, int H) {
  for (int h = 0; h < H; ++h)
    if (y[std::size_t(t) * H + h] != 0x7FC0u) return false;
  return true;
}
}  // namespace

TEST_CASE(
    "route ids outside [0, E), repeated experts and 32 distinct experts in one step: every schedule, both paths") {
  runtime::ScopedContext ctx(0);
  struct Variant {
    std::string name;
    bool shared;
    codegen::ComputePath path;
    codegen::Schedule schedule;
    std::optional<bool> warp_tables = std::nullopt;  // as planned: the warp's at B <= 4 where the routes fit
  };
  const Variant variants[] = {
      {"fast units", false, codegen::ComputePath::fast, codegen::Schedule::units},
      {"fast stream", false, codegen::ComputePath::fast, codegen::Schedule::stream},
      {"fast stream, the block's tables", false, codegen::ComputePath::fast, codegen::Schedule::stream, false},
      {"fast stream + shared expert", true, codegen::ComputePath::fast, codegen::Schedule::stream},
      {"exact stream", false, codegen::ComputePath::exact, codegen::Schedule::stream},
      {"exact items", false, codegen::ComputePath::exact, codegen::Schedule::items},
      {"exact items + shared expert", true, codegen::ComputePath::exact, codegen::Schedule::items},
      {"fast units + shared expert", true, codegen::ComputePath::fast, codegen::Schedule::units},
  };
  const int E = 40, K = 8;
  for (const Variant& v : variants) {
    codegen::MoeConfig config = gpu_test::small_config("custom", E, K, 1024, 512);
    if (v.shared) config.shared_expert = codegen::SharedExpert{};
    const reference::MoeProblem p = oracle::problem_of(config);
    const std::uint64_t seed = gpu_test::seed() ^ std::hash<std::string>{}(v.name);
    const oracle::RandomWeights weights = oracle::random_weights(p, seed);
    runtime::MoeLayerOptions options;
    options.codegen.path = v.path;
    options.codegen.schedule = v.schedule;
    options.codegen.warp_tables = v.warp_tables;
    runtime::MoeLayer layer(config, weights.device(), options);
    for (const Step& step : hostile_steps(E)) {
      const int B = static_cast<int>(step.ids.size()) / K;
      if (v.schedule == codegen::Schedule::units && B > 4) continue;  // contract::kUnitTokens
      oracle::RandomInputs in = oracle::random_inputs(p, B, oracle::RoutingKind::uniform, seed + B);
      in.routing.ids = step.ids;
      gpu_test::DeviceInputs dev(p, B);
      CUstream s = nullptr;
      MOEJIT_CU(cuStreamCreate, &s, CU_STREAM_NON_BLOCKING);
      dev.upload(in, s);
      MOEJIT_CU(cuMemsetD8Async, dev.y.ptr(), 0xFF, dev.y.bytes(), s);  // poison: 0xFFFF, not the kernel's NaN
      layer.forward(dev.args(B), s);
      const std::vector<std::uint16_t> y = gpu_test::download_sync(dev.y, s);
      MOEJIT_CU(cuMemsetD8Async, dev.y.ptr(), 0xFF, dev.y.bytes(), s);
      layer.forward(dev.args(B), s);
      CHECK(gpu_test::download_sync(dev.y, s) == y);
      layer.release_stream(s);
      MOEJIT_CU(cuStreamDestroy, s);

      const std::vector<std::uint16_t> want =
          reference::quantized_reference(p, weights.host, in.xq.elements, in.xq.scales, in.routing);
      const std::vector<std::uint16_t> resolved =
          reference::resolved_reference(p, weights.host, in.xq.elements, in.xq.scales, in.routing, y).y;
      std::vector<double> got_ok, want_ok;
      int poisoned = 0;
      for (int t = 0; t < B; ++t) {
        if (poisoned_row(want, t, p.hidden)) {
          ++poisoned;
          CHECK_MESSAGE(poisoned_row(y, t, p.hidden), v.name << ", " << step.name << ": token " << t << " not NaN");
          continue;
        }
        for (int h = 0; h < p.hidden; ++h) {
          got_ok.push_back(mx::bf16_value(y[std::size_t(t) * p.hidden + h]));
          want_ok.push_back(mx::bf16_value(resolved[std::size_t(t) * p.hidden + h]));
        }
      }
      const reference::Agreement a = reference::compare(got_ok, want_ok);
      MESSAGE(v.name << ", " << step.name << ": B=" << B << " ("
                     << std::string(layer.plan(B).warp_tables ? "warp" : "block") << " tables) poisoned tokens "
                     << poisoned << ", the others cos_q=" << a.cosine << " non-finite " << a.nan_or_inf);
      CHECK(a.nan_or_inf == 0);
      CHECK(a.cosine >= 0.99999);
      CHECK(poisoned == (step.ids.size() == 32 && step.ids[0] < 0 ? 2 : step.ids.size() == 40 ? 1 : 0));
    }
  }
}
