// What each compute CTA of a forward does, read from its trace
// (MoeForwardArgs::trace): the milestones in order, the K128 steps each
// schedule streams, the item schedule's whole items, and the shares the
// warp's routing tables give.
#include <doctest/doctest.h>

#include <utility>
#include <vector>

#include "gpu_test_util.hpp"
#include "oracle/moe_check.hpp"

using namespace moejit;
using gpu_test::DeviceInputs;
using gpu_test::download_sync;
using runtime::DeviceBuffer;

namespace {
// A forward of `b` tokens with the compute role's trace (MoeForwardArgs::trace): every CTA's
// contract::kTraceSlots slots, once the forward is done.
std::vector<std::uint64_t> traced_forward(runtime::MoeLayer& layer, DeviceInputs& dev, int b, CUstream s) {
  const std::size_t slots = std::size_t(layer.plan(b).compute.grid) * contract::kTraceSlots;
  DeviceBuffer trace(slots * 8);
  MOEJIT_CU(cuMemsetD8, trace.ptr(), 0, slots * 8);
  runtime::MoeForwardArgs traced = dev.args(b);
  traced.trace = trace.ptr();
  layer.forward(traced, s);
  MOEJIT_CU(cuStreamSynchronize, s);
  std::vector<std::uint64_t> t(slots);
  trace.download(t);
  return t;
}

// The K128 steps the schedule streams in each phase: token tiles x M extents x K steps (an M extent of
// plan.tiles 64-row tiles, the last one of a projection the rest).
std::pair<long long, long long> schedule_steps(const reference::MoeProblem& p, const codegen::MoeLaunchPlan& plan,
                                               const std::vector<int>& ids, int experts) {
  std::vector<int> count(experts, 0);
  for (const int e : ids) ++count[e];
  long long tiles = 0;
  for (const int c : count) tiles += (c + plan.tile_n - 1) / plan.tile_n;
  const auto extents = [&](long long rows) { return (rows / 64 + plan.tiles - 1) / plan.tiles; };
  return {tiles * extents(2 * p.intermediate) * (p.hidden / 128), tiles * extents(p.hidden) * (p.intermediate / 128)};
}

// The CTAs whose K128 steps of either phase differ between two traces of one forward's inputs.
int ctas_with_other_steps(const std::vector<std::uint64_t>& a, const std::vector<std::uint64_t>& b, int grid) {
  int moved = 0;
  for (int c = 0; c < grid; ++c) {
    const std::size_t at = std::size_t(c) * contract::kTraceSlots;
    moved += a[at + contract::kTraceSteps0] != b[at + contract::kTraceSteps0] ||
             a[at + contract::kTraceSteps1] != b[at + contract::kTraceSteps1];
  }
  return moved;
}

// The stream schedule's layer options with the routing tables by one warp or by the block.
runtime::MoeLayerOptions tables_options(bool warp, int tile_n = 0) {
  runtime::MoeLayerOptions o;
  o.codegen.schedule = codegen::Schedule::stream;
  o.codegen.warp_tables = warp;
  if (tile_n) o.codegen.tile_n = tile_n;
  return o;
}

// One forward's inputs through the warp's and the block's layers, traced: the same y bytes, and every CTA
// streams the same steps.
void check_tables_agree(runtime::MoeLayer& warp, runtime::MoeLayer& block, const reference::MoeProblem& p,
                        const oracle::RandomInputs& in, int b, CUstream s) {
  DeviceInputs dev(p, b);
  dev.upload(in, s);
  const std::vector<std::uint64_t> tw = traced_forward(warp, dev, b, s);
  const std::vector<std::uint16_t> yw = download_sync(dev.y, s);
  MOEJIT_CU(cuMemsetD8, dev.y.ptr(), 0xFF, dev.y.bytes());  // poison
  const std::vector<std::uint64_t> tb = traced_forward(block, dev, b, s);
  CHECK(download_sync(dev.y, s) == yw);
  const int moved = ctas_with_other_steps(tw, tb, warp.plan(b).compute.grid);
  CHECK_MESSAGE(moved == 0, moved << " CTAs streamed other steps with the warp's tables");
}

}  // namespace

TEST_CASE("a traced forward records each compute CTA's milestones in order and gives the untraced bytes") {
  // MoeForwardArgs::trace (moejit_bench_moe --trace): the bench's account of
  // where the compute role's time goes is only as good as these slots.
  runtime::ScopedContext ctx(0);
  const codegen::MoeConfig config = gpu_test::small_config("trace", 64, 4, 2048, 1024);
  const reference::MoeProblem p = oracle::problem_of(config);
  const oracle::RandomWeights w = oracle::random_weights(p, gpu_test::seed() ^ 0x7ACEull);
  runtime::MoeLayer layer(config, w.device(), {});
  CUstream s;
  MOEJIT_CU(cuStreamCreate, &s, CU_STREAM_NON_BLOCKING);
  for (const int b : {1, 24}) {
    INFO("B=", b);
    const oracle::RandomInputs in = oracle::random_inputs(p, b, oracle::RoutingKind::uniform, gpu_test::seed() + b);
    DeviceInputs dev(p, b);
    dev.upload(in, s);
    layer.forward(dev.args(b), s);
    const std::vector<std::uint16_t> plain = download_sync(dev.y, s);
    const codegen::MoeLaunchPlan plan = layer.plan(b);
    MOEJIT_CU(cuMemsetD8, dev.y.ptr(), 0xFF, dev.y.bytes());  // poison
    const std::vector<std::uint64_t> t = traced_forward(layer, dev, b, s);
    CHECK(download_sync(dev.y, s) == plain);
    // Every K128 step of the schedule streamed once.
    const auto [want0, want1] = schedule_steps(p, plan, in.routing.ids, config.experts);
    long long steps0 = 0, steps1 = 0;
    for (int c = 0; c < plan.compute.grid; ++c) {
      const auto at = [&](int slot) { return t[std::size_t(c) * contract::kTraceSlots + slot]; };
      INFO("CTA ", c);
      CHECK(at(contract::kTraceEntry) > 0);
      CHECK(at(contract::kTraceEntry) <= at(contract::kTraceScheduled));
      CHECK(at(contract::kTraceScheduled) <= at(contract::kTraceActStart));
      // The unit schedule leaves CTAs without a unit where there are fewer than the grid (B = 1 here: 32 units):
      // they stream nothing, and have no weight milestones.
      const bool streamed = at(contract::kTraceSteps0) + at(contract::kTraceSteps1) > 0;
      CHECK((streamed || plan.schedule == codegen::Schedule::units));
      if (streamed) {
        CHECK(at(contract::kTraceScheduled) <= at(contract::kTraceWeightFirst));
        CHECK(at(contract::kTraceWeightFirst) <= at(contract::kTraceWeightLast));
      }
      CHECK(at(contract::kTraceConsumerPhase1) <= at(contract::kTraceConsumerDone));
      CHECK(at(contract::kTraceConsumerDone) <= at(contract::kTraceExit));
      CHECK(at(contract::kTraceExit) - at(contract::kTraceEntry) < 1'000'000'000ull);  // nanoseconds, not garbage
      steps0 += at(contract::kTraceSteps0);
      steps1 += at(contract::kTraceSteps1);
    }
    CHECK(steps0 == want0);
    CHECK(steps1 == want1);
  }
  layer.release_stream(s);
  MOEJIT_CU(cuStreamDestroy, s);
}

TEST_CASE("the item schedule runs whole items: each CTA streams whole items and waits for no piece; y passes") {
  // Planned on the exact path at B = 1 (AtomTraits::item_max_batch), asked for at B = 24. The trace tells the
  // walk apart from the stream shares it replaced: those cut items (steps that are not whole items, owners
  // waiting for pieces), these never do.
  runtime::ScopedContext ctx(0);
  const codegen::MoeConfig config = gpu_test::small_config("items", 64, 4, 2048, 1024);
  const reference::MoeProblem p = oracle::problem_of(config);
  const oracle::RandomWeights w = oracle::random_weights(p, gpu_test::seed() ^ 0x17E45ull);
  runtime::MoeLayerOptions planned_options, asked_options;
  planned_options.codegen.path = asked_options.codegen.path = codegen::ComputePath::exact;
  asked_options.codegen.schedule = codegen::Schedule::items;
  runtime::MoeLayer planned(config, w.device(), planned_options), asked(config, w.device(), asked_options);
  CUstream s;
  MOEJIT_CU(cuStreamCreate, &s, CU_STREAM_NON_BLOCKING);
  std::uint64_t case_seed = gpu_test::seed() ^ 0x17E45ull;
  for (const int b : {1, 24}) {
    runtime::MoeLayer& layer = b == 1 ? planned : asked;
    INFO("B=", b);
    const codegen::MoeLaunchPlan plan = layer.plan(b);
    REQUIRE(plan.schedule == codegen::Schedule::items);
    const oracle::RandomInputs in = oracle::random_inputs(p, b, oracle::RoutingKind::uniform, ++case_seed);
    DeviceInputs dev(p, b);
    dev.upload(in, s);
    const std::vector<std::uint64_t> t = traced_forward(layer, dev, b, s);
    const long long kb0 = p.hidden / 128, kb1 = p.intermediate / 128;
    long long steps0 = 0, steps1 = 0;
    for (int c = 0; c < plan.compute.grid; ++c) {
      const auto at = [&](int slot) { return t[std::size_t(c) * contract::kTraceSlots + slot]; };
      INFO("CTA ", c);
      CHECK(at(contract::kTraceSteps0) % kb0 == 0);
      CHECK(at(contract::kTraceSteps1) % kb1 == 0);
      CHECK(at(contract::kTraceConsumerFlagWait) == 0);
      steps0 += at(contract::kTraceSteps0);
      steps1 += at(contract::kTraceSteps1);
    }
    const auto [want0, want1] = schedule_steps(p, plan, in.routing.ids, config.experts);
    CHECK(steps0 == want0);
    CHECK(steps1 == want1);
    const oracle::MoeCheckResult r = oracle::check_forward(layer, w, b, oracle::RoutingKind::uniform, ++case_seed);
    CHECK_MESSAGE(r.passed(), r.summary());
  }
  planned.release_stream(s);
  asked.release_stream(s);
  MOEJIT_CU(cuStreamDestroy, s);
}

TEST_CASE("the warp's routing tables are the block's: each CTA streams the same steps, y the same bytes") {
  // MoeLaunchPlan::warp_tables (planned at B <= 4): route_tables_warp also builds the stream schedule's step-cost
  // prefixes. A wrong prefix would still stream every step (the last share ends at the total) but move steps
  // between the CTAs' shares, which the traces compare; the routings give experts of one to B rows.
  runtime::ScopedContext ctx(0);
  CUstream s;
  MOEJIT_CU(cuStreamCreate, &s, CU_STREAM_NON_BLOCKING);
  std::uint64_t case_seed = gpu_test::seed() ^ 0x7AB1Eull;
  for (const bool shared : {false, true}) {
    INFO("shared expert ", shared);
    codegen::MoeConfig config = gpu_test::small_config("tables", 64, 8, 2048, 1024);
    if (shared) config.shared_expert = codegen::SharedExpert{};
    const reference::MoeProblem p = oracle::problem_of(config);
    const oracle::RandomWeights w = oracle::random_weights(p, ++case_seed);
    runtime::MoeLayer warp(config, w.device(), tables_options(true)), block(config, w.device(), tables_options(false));
    for (const int b : {1, 2, 3, 4}) {
      if (b * config.top_k + (shared ? 1 : 0) > 32) continue;  // the warp's tables take a lane a route
      for (const oracle::RoutingKind kind : oracle::k_all_routings) {
        INFO("B=", b, " routing ", oracle::routing_name(kind));
        REQUIRE(warp.plan(b).warp_tables);
        REQUIRE_FALSE(block.plan(b).warp_tables);
        check_tables_agree(warp, block, p, oracle::random_inputs(p, b, kind, ++case_seed), b, s);
      }
    }
    const oracle::MoeCheckResult r =
        oracle::check_forward(warp, w, 4 - (shared ? 1 : 0), oracle::RoutingKind::zipf, ++case_seed);
    CHECK_MESSAGE(r.passed(), r.summary());
    warp.release_stream(s);
    block.release_stream(s);
  }
  // The routings above give each expert one token tile of one cost class. 16-column token tiles (tile_n = 16: no
  // pairing) and an expert repeated within tokens give an expert a full tile and a short last one of another class
  // (20 routes: 16 + 4); 32 distinct experts fill the warp, its last lane an expert's and the total's.
  const codegen::MoeConfig config = gpu_test::small_config("tables16", 64, 8, 2048, 1024);
  const reference::MoeProblem p = oracle::problem_of(config);
  const oracle::RandomWeights w = oracle::random_weights(p, ++case_seed);
  runtime::MoeLayer warp(config, w.device(), tables_options(true, 16)),
      block(config, w.device(), tables_options(false, 16));
  REQUIRE(warp.plan(4).warp_tables);
  REQUIRE(warp.plan(4).tile_n == 16);
  const std::vector<std::int32_t> repeated = {5, 5, 5, 5, 5, 5, 5, 5, 5, 5, 5, 5, 5,  5,  5,  5,
                                              5, 5, 5, 5, 1, 2, 3, 4, 6, 7, 8, 9, 10, 11, 12, 13};
  std::vector<std::int32_t> distinct;
  for (int r = 0; r < 32; ++r) distinct.push_back((r * 7) % 64);
  for (const std::vector<std::int32_t>& ids : {repeated, distinct}) {
    INFO("ids: ", ids == repeated ? "20 routes on one expert" : "32 distinct experts");
    oracle::RandomInputs in = oracle::random_inputs(p, 4, oracle::RoutingKind::uniform, ++case_seed);
    in.routing.ids = ids;
    check_tables_agree(warp, block, p, in, 4, s);
  }
  warp.release_stream(s);
  block.release_stream(s);
  MOEJIT_CU(cuStreamDestroy, s);
}
