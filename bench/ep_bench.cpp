// moejit_bench_ep: expert parallelism on R green-context partitions of one GPU
// (docs/expert-parallelism.md), against a baseline made of existing pieces on
// the same partitions, per-rank B = 1 ... 256.
//
// Method (METHOD.md): each rank's forward on its own stream, CUDA events around
// it, after warm-up; the iterations rotate over kSets input sets so the weights
// come from HBM; per rank the median over the iterations, and the step time is
// the slowest rank's median. The floor is the bytes of the experts the step
// touches, all ranks together (the partitions share the one GPU's HBM), over
// the copy bandwidth measured in the same run.
//
// The baseline, per rank r: the all-gather of every rank's x (R copies into
// r's buffer), the R = 1 layer of r's E / R experts over all R B tokens
// (oracle::baseline_routes), and the scatter of the partial y rows back to their
// ranks (R copies out); a rank's step ends when every rank's rows have reached
// it. The final sum of a token's R partial rows is not counted (it favours the
// baseline).
#include <fmt/format.h>

#include <algorithm>
#include <memory>
#include <optional>
#include <random>
#include <string>
#include <vector>

#include "bench_common.hpp"
#include "oracle/ep_inputs.hpp"
#include "oracle/moe_check.hpp"
#include "runtime/ep_ranks.hpp"
#include "runtime/moe_layer.hpp"
#include "runtime/sm_partitions.hpp"
#include "templates/moe_contract.cuh"

using namespace moejit;
using runtime::DeviceBuffer;

namespace {
constexpr int kSets = 4;
constexpr int kIters = 40;
constexpr int kWarmup = 8;

// One input set on one rank: its B tokens (EP), and the baseline's view of all R B tokens.
struct RankSet {
  DeviceBuffer xq, xs, ids, w;    // the rank's tokens
  DeviceBuffer base_ids, base_w;  // all tokens, ids local to the rank (other ranks' routes weighted 0)
  int touched = 0;                // the rank's experts this set reaches
  oracle::EpTraffic traffic;      // EP: what its forward moves between ranks
};

struct Step {
  std::vector<double> per_rank_median;
  double max() const { return *std::max_element(per_rank_median.begin(), per_rank_median.end()); }
};

}  // namespace

namespace {
int run(int argc, char** argv) {
  std::vector<int> batches = {1, 2, 4, 8, 16, 32, 64, 128, 256};
  std::vector<int> ranks_list = {2, 4};
  std::vector<std::string> models = {"glm5.2", "dsv4.1-flash"};
  std::optional<int> ep_mode;  // unset: as planned
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    if (a == "--quick")
      batches = {1, 8, 64, 256};
    else if (a == "--batches" && i + 1 < argc)
      batches = bench::parse_int_list(a, argv[++i]);
    else if (a == "--ranks" && i + 1 < argc)
      ranks_list = bench::parse_int_list(a, argv[++i]);
    else if (a == "--model" && i + 1 < argc)
      models = {argv[++i]};
    else if (a == "--ep-mode" && i + 1 < argc && codegen::parse_ep_mode(argv[i + 1]))
      ep_mode = codegen::parse_ep_mode(argv[++i]);
    else {
      // --help asks for this text (exit 0); anything else is a usage error (exit 2).
      const bool help = a == "--help" || a == "-h";
      fmt::print(help ? stdout : stderr,
                 "usage: moejit_bench_ep [--quick | --batches 1,8,...] [--ranks 2,4] [--model glm5.2|dsv4.1-flash]\n"
                 "                        [--ep-mode none|mirror|pull|...+staged-returns|...+direct-scan]\n"
                 "  per-rank B tokens on each of R green-context partitions; EP against all-gather + the R = 1 "
                 "layer of the rank's experts + scatter\n");
      return help ? 0 : 2;
    }
  }
  // Every model, rank count and batch size is checked before the device is touched (else, without a GPU, a
  // bad one reads as a skip).
  for (const std::string& name : models)
    for (const int R : ranks_list) {
      codegen::MoeConfig c = codegen::builtin_model(name);
      if (R < 2)
        throw std::invalid_argument(
            fmt::format("--ranks: {} is outside the allowed range [2, {}]", R, contract::kMaxRanks));
      c.ranks = R;
      codegen::validate(c);
      for (int b : batches) codegen::validate_batch(c, b);
    }

  runtime::ScopedContext ctx(0);
  const runtime::DeviceInfo dev = runtime::query_device(0);
  CUstream stream;
  MOEJIT_CU(cuStreamCreate, &stream, CU_STREAM_NON_BLOCKING);
  const double bw = bench::copy_bandwidth_gbs(stream);
  fmt::print("device {} ({} SMs), copy bandwidth {:.0f} GB/s (read+write), SM clock {:.0f} MHz, path fast\n", dev.name,
             dev.sm_count, bw, bench::sm_clock_mhz(stream));
  fmt::print("{:<13} {:>2} {:>4} {:>6} {:>9} {:>9} {:>7} {:>9} {:>7} {:>10} {:>10}  {}\n", "model", "R", "B", "SMs/r",
             "floor_us", "ep_us", "%floor", "base_us", "speedup", "ep_MB/r", "base_MB/r", "ep_modes");

  std::mt19937_64 rng(std::random_device{}());
  for (const std::string& name : models) {
    const codegen::MoeConfig config = codegen::builtin_model(name);
    const reference::MoeProblem p = oracle::problem_of(config);
    const oracle::RandomWeights weights = oracle::random_weights(p, rng());
    const double expert_bytes = bench::expert_bytes(p);
    const std::size_t H = p.hidden, k = p.top_k;
    for (const int R : ranks_list) {
      runtime::SmPartitions parts(0, R);
      const int per_rank = p.experts / R;
      codegen::MoeConfig ep_config = config, base_config = config;
      ep_config.ranks = R;
      base_config.experts = per_rank;  // one GPU's layer of the rank's experts
      base_config.name = config.name + "-shard";
      base_config.token_capacity = R * *std::max_element(batches.begin(), batches.end());  // all ranks' tokens
      runtime::MoeLayerOptions o;
      o.sm_count = parts.shape().sms_per_part;
      runtime::MoeLayerOptions ep_options = o;  // the baseline is a one-rank layer: no EP modes
      ep_options.codegen.ep_mode = ep_mode;
      std::vector<std::unique_ptr<runtime::MoeLayer>> ep, base;
      for (int r = 0; r < R; ++r) {
        const runtime::CheckpointWeightsDevice shard = runtime::expert_shard(weights.device(), config, r, R);
        MOEJIT_CU(cuCtxSetCurrent, parts.context(r));
        ep.push_back(std::make_unique<runtime::MoeLayer>(ep_config, shard, ep_options));
        base.push_back(std::make_unique<runtime::MoeLayer>(base_config, shard, o));
      }
      std::vector<DeviceBuffer> ws;
      std::vector<CUdeviceptr> peers;
      for (int r = 0; r < R; ++r) ws.emplace_back(static_cast<std::size_t>(ep[0]->workspace_bytes()));
      for (auto& b : ws) peers.push_back(b.ptr());
      for (int r = 0; r < R; ++r)
        runtime::init_rank_workspace(peers[r], ep[0]->workspace_bytes(), r, peers, runtime::k_default_rank_timeout,
                                     parts.stream(r));
      std::vector<CUevent> start(R), end(R), done(R);
      for (int r = 0; r < R; ++r) {  // in the rank's context, where its stream records them
        MOEJIT_CU(cuCtxSetCurrent, parts.context(r));
        for (CUevent* e : {&start[r], &end[r], &done[r]}) MOEJIT_CU(cuEventCreate, e, CU_EVENT_DEFAULT);
      }

      for (const int B : batches) {
        const int T = R * B;
        // Inputs: kSets global sets of R B tokens, each rank's slice, and the baseline's remapped routes.
        std::vector<std::vector<RankSet>> sets(kSets);
        double touched = 0, ep_bytes = 0;
        for (int si = 0; si < kSets; ++si) {
          const oracle::RandomInputs in = oracle::random_inputs(p, T, oracle::RoutingKind::uniform, rng());
          for (int r = 0; r < R; ++r) {
            RankSet s;
            s.xq = bench::upload_rows(in.xq.elements, std::size_t(r) * B, B, H);
            s.xs = bench::upload_rows(in.xq.scales, std::size_t(r) * B, B, H / 32);
            s.ids = bench::upload_rows(in.routing.ids, std::size_t(r) * B, B, k);
            s.w = bench::upload_rows(in.routing.weights, std::size_t(r) * B, B, k);
            s.traffic = oracle::ep_traffic(in.routing, p.experts, R, r, B, int(k));
            const oracle::BaselineRoutes base = oracle::baseline_routes(in.routing, p.experts, R, r);
            s.touched = base.touched;
            s.base_ids = bench::upload(base.ids);
            s.base_w = bench::upload(base.weights);
            touched += double(s.touched) / kSets;
            sets[si].push_back(std::move(s));
          }
        }
        // Bytes between ranks, per rank (oracle::EpTraffic); the baseline copies in the other R - 1 ranks' x rows
        // (MXFP8 and scales) and copies out their partial y rows.
        const bool pull = ep[0]->plan(B).ep.has(contract::kEpPull);
        for (int si = 0; si < kSets; ++si)
          for (int r = 0; r < R; ++r) ep_bytes += sets[si][r].traffic.bytes(int(H), pull) / (kSets * R);
        const double base_bytes = double(R - 1) * B * (H + H / 32 + 2.0 * H);

        std::vector<DeviceBuffer> y, x_all, xs_all, y_part, recv;
        for (int r = 0; r < R; ++r) {
          y.emplace_back(std::size_t(B) * H * 2);
          x_all.emplace_back(std::size_t(T) * H);
          xs_all.emplace_back(std::size_t(T) * H / 32);
          y_part.emplace_back(std::size_t(T) * H * 2);
          recv.emplace_back(std::size_t(T) * H * 2);  // [R][B][H]: slot s holds rank s's partial rows
        }
        auto ep_forward = [&](int si) {
          for (int r = 0; r < R; ++r) {
            MOEJIT_CU(cuCtxSetCurrent, parts.context(r));
            const RankSet& s = sets[si][r];
            runtime::MoeForwardArgs a{s.xq.ptr(), s.xs.ptr(), 0, s.ids.ptr(), s.w.ptr(), y[r].ptr(), B};
            a.workspace = ws[r].ptr();
            MOEJIT_CU(cuEventRecord, start[r], parts.stream(r));
            ep[r]->forward(a, parts.stream(r));
            MOEJIT_CU(cuEventRecord, end[r], parts.stream(r));
          }
        };
        auto base_forward = [&](int si) {
          for (int r = 0; r < R; ++r) {
            MOEJIT_CU(cuCtxSetCurrent, parts.context(r));
            CUstream st = parts.stream(r);
            MOEJIT_CU(cuEventRecord, start[r], st);
            for (int s = 0; s < R; ++s) {
              MOEJIT_CU(cuMemcpyDtoDAsync, x_all[r].ptr() + s * B * H, sets[si][s].xq.ptr(), B * H, st);
              MOEJIT_CU(cuMemcpyDtoDAsync, xs_all[r].ptr() + s * B * H / 32, sets[si][s].xs.ptr(), B * H / 32, st);
            }
            const RankSet& mine = sets[si][r];
            base[r]->forward(
                {x_all[r].ptr(), xs_all[r].ptr(), 0, mine.base_ids.ptr(), mine.base_w.ptr(), y_part[r].ptr(), T}, st);
            for (int s = 0; s < R; ++s)
              MOEJIT_CU(cuMemcpyDtoDAsync, recv[s].ptr() + r * B * H * 2, y_part[r].ptr() + s * B * H * 2, B * H * 2,
                        st);
            MOEJIT_CU(cuEventRecord, done[r], st);
          }
          for (int s = 0; s < R; ++s) {
            for (int r = 0; r < R; ++r) MOEJIT_CU(cuStreamWaitEvent, parts.stream(s), done[r], 0);
            MOEJIT_CU(cuEventRecord, end[s], parts.stream(s));
          }
        };
        auto measure = [&](auto&& forward) {
          for (int i = 0; i < kWarmup; ++i) forward(i % kSets);
          for (int r = 0; r < R; ++r) MOEJIT_CU(cuStreamSynchronize, parts.stream(r));
          std::vector<std::vector<double>> us(R);
          for (int i = 0; i < kIters; ++i) {
            forward(i % kSets);
            for (int r = 0; r < R; ++r) {
              MOEJIT_CU(cuEventSynchronize, end[r]);
              us[r].push_back(bench::elapsed_ms(start[r], end[r]) * 1e3);
            }
          }
          Step step;
          for (int r = 0; r < R; ++r) step.per_rank_median.push_back(bench::percentile(us[r], 0.5));
          return step;
        };
        // Every rank's kernels built and loaded before any rank launches (docs/expert-parallelism.md).
        for (int r = 0; r < R; ++r) {
          MOEJIT_CU(cuCtxSetCurrent, parts.context(r));
          const RankSet& s = sets[0][r];
          runtime::MoeForwardArgs a{s.xq.ptr(), s.xs.ptr(), 0, s.ids.ptr(), s.w.ptr(), y[r].ptr(), B};
          a.workspace = ws[r].ptr();
          ep[r]->launches(a, parts.stream(r));
        }
        const Step e = measure(ep_forward);
        for (int r = 0; r < R; ++r)
          if (auto error = runtime::rank_wait_error(ws[r].ptr(), parts.stream(r))) {
            fmt::print(stderr, "moejit_bench_ep: {}\n", *error);
            return 1;
          }
        const Step b = measure(base_forward);
        const double floor_us = touched * expert_bytes / (bw * 1e9) * 1e6;
        fmt::print("{:<13} {:>2} {:>4} {:>6} {:>9.1f} {:>9.1f} {:>6.1f}% {:>9.1f} {:>6.2f}x {:>10.2f} {:>10.2f}  {}\n",
                   name, R, B, parts.shape().sms_per_part, floor_us, e.max(), 100.0 * floor_us / e.max(), b.max(),
                   b.max() / e.max(), ep_bytes / 1e6, base_bytes / 1e6, codegen::ep_mode_names(ep[0]->plan(B).ep.mode));
        std::fflush(stdout);
      }
      for (int r = 0; r < R; ++r) {
        MOEJIT_CU(cuCtxSetCurrent, parts.context(r));
        ep[r]->release_stream(parts.stream(r));
        base[r]->release_stream(parts.stream(r));
        for (CUevent ev : {start[r], end[r], done[r]}) MOEJIT_CU(cuEventDestroy, ev);
      }
      MOEJIT_CU(cuCtxSetCurrent, ctx.get());
    }
  }
  return 0;
}
}  // namespace

int main(int argc, char** argv) {
  return bench::guarded_main("moejit_bench_ep", argc, argv, run);
}
