// Expert parallelism on one GPU: R ranks are R green-context partitions, each
// with its own MoeLayer (E / R experts), workspace and stream, talking only
// through the peer tables of their workspaces (templates/moe_ep.cuh). Every
// routing gives the y of the R = 1 layer on the same global inputs.
#include <doctest/doctest.h>

#include <algorithm>
#include <chrono>
#include <memory>
#include <optional>
#include <random>
#include <vector>

#include "gpu_test_util.hpp"
#include "oracle/ep_inputs.hpp"
#include "oracle/moe_check.hpp"
#include "oracle/moe_reference.hpp"
#include "runtime/device.hpp"
#include "runtime/driver_api.hpp"
#include "runtime/ep_ranks.hpp"
#include "runtime/moe_layer.hpp"
#include "runtime/sm_partitions.hpp"

using namespace moejit;
using gpu_test::bad_elements;
using gpu_test::DeviceInputs;
using gpu_test::download_sync;
using runtime::DeviceBuffer;

namespace {
// R ranks of `config` on R partitions: layers, workspaces (initialized as one group), streams.
struct Ranks {
  runtime::SmPartitions parts;
  std::vector<std::unique_ptr<runtime::MoeLayer>> layers;
  std::vector<DeviceBuffer> ws;
  Ranks(const codegen::MoeConfig& global, const oracle::RandomWeights& w, int ranks, std::chrono::milliseconds timeout,
        std::optional<int> ep_mode = std::nullopt, std::optional<codegen::ComputePath> path = std::nullopt)
      : parts(0, ranks) {
    codegen::MoeConfig c = global;
    c.ranks = ranks;
    runtime::MoeLayerOptions o;
    o.sm_count = parts.shape().sms_per_part;
    o.codegen.ep_mode = ep_mode;
    o.codegen.path = path;
    for (int r = 0; r < ranks; ++r) {
      MOEJIT_CU(cuCtxSetCurrent, parts.context(r));
      layers.push_back(std::make_unique<runtime::MoeLayer>(c, runtime::expert_shard(w.device(), global, r, ranks), o));
    }
    std::vector<CUdeviceptr> peers;
    for (int r = 0; r < ranks; ++r) ws.emplace_back(static_cast<std::size_t>(layers[0]->workspace_bytes()));
    for (auto& b : ws) peers.push_back(b.ptr());
    for (int r = 0; r < ranks; ++r)
      runtime::init_rank_workspace(peers[r], layers[0]->workspace_bytes(), r, peers, timeout, parts.stream(r));
  }
  ~Ranks() {
    for (std::size_t r = 0; r < layers.size(); ++r) {
      MOEJIT_CU(cuCtxSetCurrent, parts.context(int(r)));
      layers[r]->release_stream(parts.stream(int(r)));
    }
  }
  void forward(int rank, const DeviceInputs& in, int tokens) {
    MOEJIT_CU(cuCtxSetCurrent, parts.context(rank));
    layers[rank]->forward(in.args(tokens, ws[rank].ptr()), parts.stream(rank));
  }
};

// One forward of every rank on the R * B tokens of `in` against the R = 1 layer's y; with `replays`, that many
// more forwards, which must give the same bits.
void check_forward(Ranks& ranks, runtime::MoeLayer& single, CUcontext ctx, CUstream s1, const reference::MoeProblem& p,
                   const oracle::RandomWeights& w, const oracle::RandomInputs& in, int B, int replays) {
  const int R = static_cast<int>(ranks.layers.size());
  DeviceInputs all(p, R * B);
  MOEJIT_CU(cuCtxSetCurrent, ctx);
  all.upload(in, s1);
  MOEJIT_CU(cuMemsetD8Async, all.y.ptr(), 0xFF, all.y.bytes(), s1);  // poison
  single.forward(all.args(R * B, 0), s1);
  const std::vector<std::uint16_t> want = download_sync(all.y, s1);
  REQUIRE(bad_elements(want) == 0);

  std::vector<std::unique_ptr<DeviceInputs>> mine;
  for (int r = 0; r < R; ++r) {
    MOEJIT_CU(cuCtxSetCurrent, ranks.parts.context(r));
    mine.push_back(std::make_unique<DeviceInputs>(p, B));
    mine[r]->upload(in, ranks.parts.stream(r), std::size_t(r) * B);
    MOEJIT_CU(cuMemsetD8Async, mine[r]->y.ptr(), 0xFF, mine[r]->y.bytes(), ranks.parts.stream(r));  // poison
  }
  // Every rank's kernels built and loaded before any rank launches (docs/expert-parallelism.md).
  for (int r = 0; r < R; ++r) {
    MOEJIT_CU(cuCtxSetCurrent, ranks.parts.context(r));
    ranks.layers[r]->launches(mine[r]->args(B, ranks.ws[r].ptr()), ranks.parts.stream(r));
  }
  for (int r = 0; r < R; ++r) ranks.forward(r, *mine[r], B);
  std::vector<std::uint16_t> got;
  for (int r = 0; r < R; ++r) {
    const std::vector<std::uint16_t> y = download_sync(mine[r]->y, ranks.parts.stream(r));
    got.insert(got.end(), y.begin(), y.end());
    const auto error = runtime::rank_wait_error(ranks.ws[r].ptr(), ranks.parts.stream(r));
    CHECK_MESSAGE(!error, *error);
  }
  CHECK(bad_elements(got) == 0);
  const double c = oracle::compare_bf16(got, want).cosine;
  CHECK_MESSAGE(c >= 0.99999, "cosine vs the R = 1 layer " << c);
  if (R * B <= 8) {
    const std::vector<std::uint16_t> ref =
        reference::resolved_reference(p, w.host, in.xq.elements, in.xq.scales, in.routing, got).y;
    const double cr = oracle::compare_bf16(got, ref).cosine;
    CHECK_MESSAGE(cr >= 0.99999, "cosine vs the quantized CPU reference " << cr);
  }
  if (replays == 0) return;
  for (int n = 0; n < replays; ++n)
    for (int r = 0; r < R; ++r) ranks.forward(r, *mine[r], B);
  std::vector<std::uint16_t> again;
  for (int r = 0; r < R; ++r) {
    const std::vector<std::uint16_t> y = download_sync(mine[r]->y, ranks.parts.stream(r));
    again.insert(again.end(), y.begin(), y.end());
    CHECK(!runtime::rank_wait_error(ranks.ws[r].ptr(), ranks.parts.stream(r)));
  }
  CHECK(again == got);
}
// The cases of one model: for each R and each mode ("planned", or forced), R ranks against the R = 1 layer at
// every B and routing; `replays` more forwards of the uniform routing at B = 8 must give the same bits.
struct Sweep {
  const char* model;
  std::optional<codegen::ComputePath> path;
  std::vector<int> ranks, batches, routings;
  std::vector<const char*> modes;
  int replays;
  std::uint64_t salt;
};
void run_sweep(const Sweep& sw) {
  CAPTURE(sw.model);
  runtime::ScopedContext ctx(0);
  CUstream s1 = nullptr;
  MOEJIT_CU(cuStreamCreate, &s1, CU_STREAM_NON_BLOCKING);
  const codegen::MoeConfig config = codegen::builtin_model(sw.model);
  const reference::MoeProblem p = oracle::problem_of(config);
  const std::uint64_t seed = gpu_test::seed() ^ sw.salt;
  const oracle::RandomWeights w = oracle::random_weights(p, seed);
  runtime::MoeLayerOptions one;
  one.codegen.path = sw.path;
  {
    runtime::MoeLayer single(config, w.device(), one);
    for (const int R : sw.ranks)
      for (const char* modes : sw.modes) {
        CAPTURE(R);
        CAPTURE(modes);
        const std::optional<int> mode = codegen::parse_ep_mode(modes);  // "planned": none given
        Ranks ranks(config, w, R, runtime::k_default_rank_timeout, mode, sw.path);
        const codegen::MoeLaunchPlan plan = ranks.layers[0]->plan(8);
        REQUIRE(plan.atom == single.plan(8).atom);
        if (mode) REQUIRE(plan.ep.mode == *mode);
        // (doctest streams a leading const char* as a pointer: strings only)
        const std::string line = std::string(sw.model) + " R = " + std::to_string(R) + ": " +
                                 std::to_string(ranks.parts.shape().sms_per_part) + " SMs per rank, EP modes " +
                                 codegen::ep_mode_names(plan.ep.mode) + (mode ? "" : " (planned)");
        MESSAGE(line);
        std::uint64_t case_seed = seed + 100 * R + 10000 * mode.value_or(16);
        for (const int B : sw.batches)
          for (const int routing : sw.routings) {
            CAPTURE(B);
            CAPTURE(routing);
            const oracle::RandomInputs in = oracle::ep_inputs(p, R, B, routing, ++case_seed);
            check_forward(ranks, single, ctx.get(), s1, p, w, in, B, routing == 0 && B == 8 ? sw.replays : 0);
          }
      }
    MOEJIT_CU(cuCtxSetCurrent, ctx.get());
    single.release_stream(s1);
  }
  MOEJIT_CU(cuStreamDestroy, s1);
}
}  // namespace

TEST_CASE("expert parallelism: R = 2 and 4 ranks on SM partitions give the y of the R = 1 layer") {
  for (const char* model : {"glm5.2", "dsv4.1-flash"})
    run_sweep({model, std::nullopt, {2, 4}, {1, 8, 64}, {0, 1, 2, 3, 4, 5}, {"planned"}, 100, 0xE9});
}

// Each EpMode bit the planner may choose, forced (the plan above takes pull + staged returns for these
// models at R = 2 and 4): the y of the R = 1 layer, whatever the route metadata, rows and returns travel by.
TEST_CASE("expert parallelism: every EP mode gives the y of the R = 1 layer") {
  for (const char* model : {"glm5.2", "dsv4.1-flash"})
    run_sweep({model,
               std::nullopt,
               {2},
               {1, 8},
               {0, 4, 5},
               {"none", "pull", "mirror", "mirror+direct-scan", "staged-returns+direct-scan"},
               20,
               0xE7});
}

// The exact path's GEMM1 rows are the BF16 image (x_bf16), which the pull copies instead of the MXFP8 rows and
// scale words, and whose scales the mirror does not push.
TEST_CASE("expert parallelism: the exact path across ranks, pulled and mirrored") {
  run_sweep({"glm5.2",
             codegen::ComputePath::exact,
             {2},
             {1, 8},
             {0, 5},
             {"pull+staged-returns", "mirror+direct-scan"},
             20,
             0xE8});
}

TEST_CASE("expert parallelism: a rank whose roles never launch is reported by the others within the timeout") {
  runtime::ScopedContext ctx(0);
  const codegen::MoeConfig config = codegen::builtin_model("glm5.2");
  const reference::MoeProblem p = oracle::problem_of(config);
  const std::uint64_t seed = gpu_test::seed() ^ 0xDEADull;
  const oracle::RandomWeights w = oracle::random_weights(p, seed);
  const std::chrono::milliseconds timeout{300};
  // Whoever waits on the peers (the pulling dispatch as planned, every compute CTA, or the scanning one).
  for (const char* modes : {"planned", "none", "mirror+direct-scan"}) {
    CAPTURE(modes);
    const std::optional<int> mode = codegen::parse_ep_mode(modes);
    Ranks ranks(config, w, 2, timeout, mode);
    const int B = 8;
    const oracle::RandomInputs in = oracle::random_inputs(p, 2 * B, oracle::RoutingKind::uniform, seed);
    MOEJIT_CU(cuCtxSetCurrent, ranks.parts.context(0));
    DeviceInputs mine(p, B);
    mine.upload(in, ranks.parts.stream(0));
    MOEJIT_CU(cuMemsetD8Async, mine.y.ptr(), 0xFF, mine.y.bytes(), ranks.parts.stream(0));  // poison
    ranks.layers[0]->launches(mine.args(B, ranks.ws[0].ptr()), ranks.parts.stream(0));  // compiles, launches nothing
    MOEJIT_CU(cuStreamSynchronize, ranks.parts.stream(0));
    // Rank 1 never runs: rank 0 gives up on rank 1's dispatch, its finalize on rank 1's compute.
    const auto t0 = std::chrono::steady_clock::now();
    ranks.forward(0, mine, B);
    const auto error = runtime::rank_wait_error(ranks.ws[0].ptr(), ranks.parts.stream(0));
    const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    REQUIRE(error.has_value());
    MESSAGE(std::string(modes) << ": " << *error << " (after " << seconds << " s)");
    CHECK(error->find("rank 0: rank 1 did not dispatch") != std::string::npos);
    CHECK(error->find("`dispatched`") != std::string::npos);
    // Rank 0 told rank 1, so that it would not take this forward for a good one either.
    const auto told = runtime::rank_wait_error(ranks.ws[1].ptr(), ranks.parts.stream(1));
    REQUIRE(told.has_value());
    MESSAGE(*told);
    CHECK(told->find("rank 1: rank 0 gave up on the forward") != std::string::npos);
    // The first wait, then the later ones (which give up at once: the error is set; a wait behind another one
    // has twice the timeout): within about one timeout, far from a hang.
    CHECK(seconds < 4 * timeout.count() / 1000.0 + 1.0);
  }
}
