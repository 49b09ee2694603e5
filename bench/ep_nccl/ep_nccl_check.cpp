// moejit_ep_nccl check and soak: the expert-parallel layer on R GPUs against
// the one-GPU layer, and a rank lost mid-run.
#include <fmt/format.h>
#include <signal.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <nlohmann/json.hpp>

#include "bench/ep_nccl/ep_nccl_runs.hpp"
#include "oracle/ep_inputs.hpp"
#include "oracle/moe_reference.hpp"
#include "runtime/device.hpp"
#include "runtime/driver_api.hpp"
#include "runtime/ep_ranks.hpp"

namespace moejit::bench {
namespace {
using runtime::DeviceBuffer;

// One rank's B tokens of the global inputs on its GPU, and its y.
struct RankInputs {
  DeviceBuffer xq, xs, ids, w, y;
  RankInputs(const reference::MoeProblem& p, const oracle::RandomInputs& in, int first, int tokens, CUstream s)
      : xq(std::size_t(tokens) * p.hidden),
        xs(std::size_t(tokens) * p.hidden / 32),
        ids(std::size_t(tokens) * p.top_k * 4),
        w(std::size_t(tokens) * p.top_k * 4),
        y(std::size_t(tokens) * p.hidden * 2) {
    const std::size_t H = p.hidden, k = p.top_k, t0 = first, n = tokens;
    MOEJIT_CU(cuMemcpyHtoDAsync, xq.ptr(), in.xq.elements.data() + t0 * H, n * H, s);
    MOEJIT_CU(cuMemcpyHtoDAsync, xs.ptr(), in.xq.scales.data() + t0 * H / 32, n * H / 32, s);
    MOEJIT_CU(cuMemcpyHtoDAsync, ids.ptr(), in.routing.ids.data() + t0 * k, n * k * 4, s);
    MOEJIT_CU(cuMemcpyHtoDAsync, w.ptr(), in.routing.weights.data() + t0 * k, n * k * 4, s);
    MOEJIT_CU(cuMemsetD8Async, y.ptr(), 0xFF, y.bytes(), s);  // poison
  }
  runtime::MoeForwardArgs args(int tokens, CUdeviceptr workspace) const {
    runtime::MoeForwardArgs a{xq.ptr(), xs.ptr(), 0, ids.ptr(), w.ptr(), y.ptr(), tokens};
    a.workspace = workspace;
    return a;
  }
  std::vector<std::uint16_t> download(CUstream s) const {
    std::vector<std::uint16_t> v(y.bytes() / 2);
    MOEJIT_CU(cuStreamSynchronize, s);
    y.download(v);
    return v;
  }
};

int report_lost(NcclRanks& ranks, const EpNcclOptions& o, const std::string& error, const std::string& where) {
  emit(o, fmt::format("{}: {}", where, error), nlohmann::json{{"lost_rank", error}, {"where", where}}.dump());
  ranks.abandon();
  return kExitLostRank;
}
}  // namespace

int run_check(NcclRanks& ranks, const EpNcclOptions& o) {
  const int R = ranks.ranks();
  int failed = 0, passed = 0;
  for (const std::string& model : o.models) {
    const codegen::MoeConfig config = codegen::builtin_model(model);
    const reference::MoeProblem p = oracle::problem_of(config);
    const std::uint64_t seed = model_seed(o, model);
    std::vector<RankModel> models = load_model(ranks, config, seed, o);
    // The one-GPU layer of all E experts on every local rank's GPU: the y each rank's tokens must get. It runs
    // every rank's tokens at once, R times the largest B.
    codegen::MoeConfig single_config = config;
    single_config.token_capacity =
        std::max(config.token_capacity, R * *std::max_element(o.batches.begin(), o.batches.end()));
    std::vector<std::unique_ptr<runtime::MoeLayer>> single;
    for (std::size_t i = 0; i < ranks.local().size(); ++i) {
      MOEJIT_CU(cuCtxSetCurrent, ranks.local()[i].ctx);
      single.push_back(std::make_unique<runtime::MoeLayer>(single_config, models[i].weights->device()));
    }
    const AbortOnThrow abort_on_throw(ranks);
    ranks.setup_workspaces(models[0].ep->workspace_bytes(), *o.peers, o.rank_timeout,
                           runtime::query_device(ranks.local()[0].device).target_name());
    std::uint64_t case_seed = seed;
    for (const int B : o.batches)
      for (const int routing : o.routings) {
        const oracle::RandomInputs in = oracle::ep_inputs(p, R, B, routing, ++case_seed);
        std::vector<std::unique_ptr<RankInputs>> all, mine;
        std::vector<std::vector<std::uint16_t>> want;
        const AbortOnThrow abort_on_throw_case(ranks);  // before the inputs' frees wait on a stream
        for (std::size_t i = 0; i < ranks.local().size(); ++i) {
          NcclRank& r = ranks.local()[i];
          MOEJIT_CU(cuCtxSetCurrent, r.ctx);
          all.push_back(std::make_unique<RankInputs>(p, in, 0, R * B, r.stream));
          single[i]->forward(all[i]->args(R * B, 0), r.stream);
          const std::vector<std::uint16_t> y = all[i]->download(r.stream);
          want.emplace_back(y.begin() + std::size_t(r.rank) * B * p.hidden,
                            y.begin() + std::size_t(r.rank + 1) * B * p.hidden);
          mine.push_back(std::make_unique<RankInputs>(p, in, r.rank * B, B, r.stream));
          // Every rank's kernels built and loaded before any rank launches (docs/expert-parallelism.md).
          models[i].ep->launches(mine[i]->args(B, r.ws), r.stream);
        }
        ranks.barrier();
        for (std::size_t i = 0; i < ranks.local().size(); ++i) {
          MOEJIT_CU(cuCtxSetCurrent, ranks.local()[i].ctx);
          models[i].ep->forward(mine[i]->args(B, ranks.local()[i].ws), ranks.local()[i].stream);
        }
        const std::string where = fmt::format("{} B = {} {}", model, B, oracle::ep_routing_name(routing));
        if (auto lost = lost_rank(ranks)) return report_lost(ranks, o, *lost, where);
        std::vector<std::vector<std::uint16_t>> got;
        for (std::size_t i = 0; i < ranks.local().size(); ++i) {
          MOEJIT_CU(cuCtxSetCurrent, ranks.local()[i].ctx);
          got.push_back(mine[i]->download(ranks.local()[i].stream));
        }
        // The uniform routing: every rank's forward captured into a CUDA graph (as an engine captures its decode
        // step; the forward's number is the header's, on the device, so a replay is the next forward), replayed
        // `replays` times with y poisoned before each: the same bits every time.
        const int replays = routing == 0 ? o.replays : 0;
        std::vector<bool> stable(ranks.local().size(), true);
        std::vector<CUgraphExec> graphs(ranks.local().size(), nullptr);
        for (std::size_t i = 0; i < graphs.size() && replays; ++i) {
          NcclRank& r = ranks.local()[i];
          MOEJIT_CU(cuCtxSetCurrent, r.ctx);
          CUgraph g = nullptr;
          MOEJIT_CU(cuStreamBeginCapture, r.stream, CU_STREAM_CAPTURE_MODE_THREAD_LOCAL);
          models[i].ep->forward(mine[i]->args(B, r.ws), r.stream);
          MOEJIT_CU(cuStreamEndCapture, r.stream, &g);
          MOEJIT_CU(cuGraphInstantiateWithFlags, &graphs[i], g, 0);
          MOEJIT_CU(cuGraphDestroy, g);
        }
        for (int n = 0; n < replays; ++n) {
          for (std::size_t i = 0; i < ranks.local().size(); ++i) {
            NcclRank& r = ranks.local()[i];
            MOEJIT_CU(cuCtxSetCurrent, r.ctx);
            MOEJIT_CU(cuMemsetD8Async, mine[i]->y.ptr(), 0xFF, mine[i]->y.bytes(), r.stream);  // poison
            MOEJIT_CU(cuGraphLaunch, graphs[i], r.stream);
          }
          if (auto lost = lost_rank(ranks)) return report_lost(ranks, o, *lost, where + fmt::format(", replay {}", n));
          for (std::size_t i = 0; i < ranks.local().size(); ++i) {
            MOEJIT_CU(cuCtxSetCurrent, ranks.local()[i].ctx);
            stable[i] = stable[i] && mine[i]->download(ranks.local()[i].stream) == got[i];
          }
        }
        for (std::size_t i = 0; i < graphs.size(); ++i)
          if (graphs[i]) {
            MOEJIT_CU(cuCtxSetCurrent, ranks.local()[i].ctx);
            MOEJIT_CU(cuGraphExecDestroy, graphs[i]);
          }
        for (std::size_t i = 0; i < ranks.local().size(); ++i) {
          const reference::Agreement agree = oracle::compare_bf16(got[i], want[i]);
          const double c = agree.cosine;
          const std::size_t bad = agree.nan_or_inf;  // NaN, Inf or the poison: unwritten
          const bool ok = c >= 0.99999 && bad == 0 && stable[i];
          (ok ? passed : failed) += 1;
          const int rank = ranks.local()[i].rank;
          emit(
              o,
              fmt::format(
                  "{} rank {} of {}: {} cos {:.7f} vs the one-GPU layer, {} NaN/Inf/unwritten{}", where, rank, R,
                  ok ? "PASS" : "FAIL", c, bad,
                  replays ? fmt::format(", {} graph replays {}", replays, stable[i] ? "bitwise equal" : "DIFFER") : ""),
              nlohmann::json{{"model", model},
                             {"B", B},
                             {"routing", oracle::ep_routing_name(routing)},
                             {"rank", rank},
                             {"ranks", R},
                             {"cosine", c},
                             {"bad", bad},
                             {"replays", replays},
                             {"stable", bool(stable[i])},
                             {"pass", ok}}
                  .dump());
        }
      }
    ranks.free_workspaces();
    for (std::size_t i = 0; i < ranks.local().size(); ++i) {
      MOEJIT_CU(cuCtxSetCurrent, ranks.local()[i].ctx);
      single[i]->release_stream(ranks.local()[i].stream);
      models[i].ep->release_stream(ranks.local()[i].stream);
    }
  }
  emit(o, fmt::format("{} passed, {} failed", passed, failed),
       nlohmann::json{{"passed", passed}, {"failed", failed}}.dump());
  return failed ? 1 : 0;
}

int run_soak(NcclRanks& ranks, const EpNcclOptions& o) {
  const int R = ranks.ranks();
  const std::string& model = o.models.front();
  const codegen::MoeConfig config = codegen::builtin_model(model);
  const reference::MoeProblem p = oracle::problem_of(config);
  const std::uint64_t seed = model_seed(o, model);
  const int B = o.batches.front();
  std::vector<RankModel> models = load_model(ranks, config, seed, o);
  const AbortOnThrow abort_on_throw(ranks);
  ranks.setup_workspaces(models[0].ep->workspace_bytes(), *o.peers, o.rank_timeout,
                         runtime::query_device(ranks.local()[0].device).target_name());
  const oracle::RandomInputs in = oracle::ep_inputs(p, R, B, 0, seed + 1);
  std::vector<std::unique_ptr<RankInputs>> mine;
  const AbortOnThrow abort_on_throw_inputs(ranks);
  for (std::size_t i = 0; i < ranks.local().size(); ++i) {
    NcclRank& r = ranks.local()[i];
    MOEJIT_CU(cuCtxSetCurrent, r.ctx);
    mine.push_back(std::make_unique<RankInputs>(p, in, r.rank * B, B, r.stream));
    models[i].ep->launches(mine[i]->args(B, r.ws), r.stream);
  }
  ranks.barrier();
  using Clock = std::chrono::steady_clock;
  for (int n = 1; n <= o.forwards; ++n) {
    const auto launched = Clock::now();
    for (std::size_t i = 0; i < ranks.local().size(); ++i) {
      NcclRank& r = ranks.local()[i];
      MOEJIT_CU(cuCtxSetCurrent, r.ctx);
      models[i].ep->forward(mine[i]->args(B, r.ws), r.stream);
      if (r.rank == o.die_rank && n == o.die_after) {
        // Lost mid-run: its forward is in flight, nothing is torn down.
        emit(o, fmt::format("rank {}: killing itself (SIGKILL) with forward {} in flight", r.rank, n),
             nlohmann::json{{"rank", r.rank}, {"dies_at_forward", n}}.dump());
        std::fflush(nullptr);
        raise(SIGKILL);
      }
    }
    if (auto lost = lost_rank(ranks)) {
      // The bound a loss is reported within: a forward's waits run one after another, each up to the timeout,
      // the later ones at once once an error is set (docs/expert-parallelism.md, "Failure"): well inside four.
      const double seconds = std::chrono::duration<double>(Clock::now() - launched).count();
      const double bound = 4.0 * o.rank_timeout.count() / 1000.0 + 1.0;
      const int rc = report_lost(
          ranks, o, *lost,
          fmt::format("{} B = {}, forward {}: reported {:.2f} s after its launch ({} the bound of 4 rank timeouts "
                      "of {} ms + 1 s)",
                      model, B, n, seconds, seconds <= bound ? "within" : "PAST", o.rank_timeout.count()));
      return seconds <= bound ? rc : 1;
    }
  }
  emit(o, fmt::format("{} B = {}: {} forwards on {} ranks, no rank lost", model, B, o.forwards, R),
       nlohmann::json{{"model", model}, {"B", B}, {"forwards", o.forwards}, {"lost", false}}.dump());
  ranks.free_workspaces();
  for (std::size_t i = 0; i < ranks.local().size(); ++i) {
    MOEJIT_CU(cuCtxSetCurrent, ranks.local()[i].ctx);
    models[i].ep->release_stream(ranks.local()[i].stream);
  }
  return 0;
}

}  // namespace moejit::bench
