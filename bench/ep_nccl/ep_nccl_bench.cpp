// moejit_ep_nccl bench: the expert-parallel layer on R GPUs against two NCCL
// baselines around the one-GPU layer of the rank's experts, in the same run
// (METHOD.md: CUDA events around each forward, warm-up, median over rotated
// input sets; the step is the slowest rank's median).
//
// The baselines, per rank r, run the one-GPU layer of r's E / R experts over all
// R B tokens (oracle::baseline_routes) between two collectives:
//  - all-to-all (a2a_us): ncclAlltoAll of x (MXFP8 rows and scale words; every
//    rank's B rows to every rank, the capacity-padded dispatch: at R = 2 and
//    k = 8 a token reaches the other rank's experts with probability 1 - 2^-8),
//    the layer, ncclAlltoAll of the partial y rows back to their tokens' ranks,
//    and their sum (rank_sum.hpp). NCCL 2.28 and later (ncclAlltoAll).
//  - all-gather (base_us): ncclAllGather of x (the same rows), the layer, and
//    ncclReduceScatter, which sums the partial rows inside the collective.
// The speedup column is against the faster of the two. Each GPU streams its
// own experts from its own HBM: a rank's floor is its touched experts' bytes
// over its copy bandwidth, the step's the largest of them.
#include <fmt/format.h>

#include <algorithm>
#include <cstdio>
#include <memory>
#include <nlohmann/json.hpp>
#include <optional>
#include <stdexcept>

#include "bench/bench_common.hpp"
#include "bench/ep_nccl/ep_nccl_runs.hpp"
#include "bench/ep_nccl/nvlink_counters.hpp"
#include "bench/ep_nccl/rank_launch.hpp"
#include "bench/ep_nccl/rank_sum.hpp"
#include "oracle/ep_inputs.hpp"
#include "runtime/device.hpp"
#include "runtime/driver_api.hpp"
#include "runtime/ep_ranks.hpp"
#include "runtime/loaded_kernel.hpp"
#include "templates/moe_contract.cuh"

namespace moejit::bench {
namespace {
using runtime::DeviceBuffer;
constexpr int kSets = 4, kIters = 40, kWarmup = 8;

// One input set on one rank: its B tokens (EP), the baseline's routes of all R B tokens, and what EP moves.
struct RankSet {
  DeviceBuffer xq, xs, ids, w, base_ids, base_w;
  oracle::EpTraffic traffic;
  int touched = 0;
};

// Every rank's `values` (the same count on each), rank-major, on every local rank.
std::vector<double> all_gather(NcclRanks& ranks, const std::vector<std::vector<double>>& values) {
  const Watchdog guard(kSetupStepTimeout, "the results' ncclAllGather", kExitRankGone);
  // The buffers before the abort guard: on a throw the communicator is aborted first, then they are freed (a
  // free would wait on an all-gather stuck on a dead peer; nccl_ranks.hpp).
  std::vector<DeviceBuffer> send, recv;
  const AbortOnThrow abort_on_throw(ranks);
  const std::size_t n = values.front().size(), R = std::size_t(ranks.ranks());
  const bool grouped = ranks.local().size() > 1;
  if (grouped) ranks.check(ranks.api().ncclGroupStart(), "ncclGroupStart");
  for (std::size_t i = 0; i < ranks.local().size(); ++i) {
    NcclRank& r = ranks.local()[i];
    MOEJIT_CU(cuCtxSetCurrent, r.ctx);
    send.push_back(upload(values[i]));
    recv.emplace_back(n * R * sizeof(double));
    ranks.check(ranks.api().ncclAllGather(reinterpret_cast<void*>(send[i].ptr()),
                                          reinterpret_cast<void*>(recv[i].ptr()), n, ncclFloat64, r.comm, r.stream),
                "ncclAllGather (results)");
  }
  if (grouped) ranks.check(ranks.api().ncclGroupEnd(), "ncclGroupEnd");
  std::vector<double> all(n * R);
  for (std::size_t i = 0; i < ranks.local().size(); ++i) {
    MOEJIT_CU(cuCtxSetCurrent, ranks.local()[i].ctx);
    MOEJIT_CU(cuStreamSynchronize, ranks.local()[i].stream);
  }
  MOEJIT_CU(cuCtxSetCurrent, ranks.local()[0].ctx);
  recv[0].download(all);
  return all;
}
}  // namespace

int run_bench(NcclRanks& ranks, const EpNcclOptions& o) {
  const int R = ranks.ranks();
  auto& local = ranks.local();
  const bool printer = local.front().rank == 0;
  const int max_b = *std::max_element(o.batches.begin(), o.batches.end());
  std::vector<double> bw;
  std::vector<std::optional<NvlinkCounters>> links;
  std::string links_note = "on";
  for (NcclRank& r : local) {
    MOEJIT_CU(cuCtxSetCurrent, r.ctx);
    bw.push_back(copy_bandwidth_gbs(r.stream));
    std::string why;
    links.push_back(NvlinkCounters::open(r.cu_device, &why));
    if (!links.back()) links_note = "off (" + why + ")";
  }
  if (printer) {
    MOEJIT_CU(cuCtxSetCurrent, local.front().ctx);
    const runtime::DeviceInfo dev = runtime::query_device(local.front().device);
    emit(o,
         fmt::format("{} ranks, one {} ({} SMs) each; rank 0: copy bandwidth {:.0f} GB/s (read+write), SM clock {:.0f} "
                     "MHz; NCCL {}; peer table {}; NVLink counters {}\n(MB/r: the bytes a rank's routes imply; nvl_MB: "
                     "what its GPU's NVLink counters saw, sent + received, a forward)\n{:<13} {:>2} {:>4} {:>9} {:>9} "
                     "{:>7} {:>9} {:>9} {:>7} {:>8} {:>8} {:>7} {:>8} {:>8} {:>7}  {}",
                     R, dev.name, dev.sm_count, bw.front(), sm_clock_mhz(local.front().stream), ranks.api().version,
                     peer_table_name(*o.peers), links_note, "model", "R", "B", "floor_us", "ep_us", "%floor", "a2a_us",
                     "base_us", "speedup", "ep_MB/r", "nvl_MB", "nvl_GB/s", "base_MB", "base_nvl", "nvl_GB/s",
                     "ep_modes"),
         nlohmann::json{{"ranks", R},
                        {"device", dev.name},
                        {"copy_bandwidth_gbs", bw.front()},
                        {"nccl", ranks.api().version},
                        {"peer_table", peer_table_name(*o.peers)}}
             .dump());
  }
  // The all-to-all baseline's sum, where the loaded NCCL has ncclAlltoAll (a cuLibrary: every context's).
  const bool a2a = ranks.api().ncclAlltoAll != nullptr;
  std::unique_ptr<runtime::LoadedKernel> rank_sum;
  if (a2a) {
    MOEJIT_CU(cuCtxSetCurrent, local.front().ctx);
    const auto target = codegen::parse_target(runtime::query_device(local.front().device).target_name());
    if (!target) throw std::runtime_error("the all-to-all baseline: no target for this GPU");
    rank_sum = std::make_unique<runtime::LoadedKernel>(rank_sum_cubin(*target), k_rank_sum_entry);
  }
  for (const std::string& model : o.models) {
    const codegen::MoeConfig config = codegen::builtin_model(model);
    const reference::MoeProblem p = oracle::problem_of(config);
    const std::size_t H = p.hidden, k = p.top_k;
    const std::uint64_t seed = model_seed(o, model);
    std::vector<RankModel> models = load_model(ranks, config, seed, o);
    codegen::MoeConfig base_config = config;
    base_config.experts = config.experts / R;  // one GPU's layer of the rank's experts, over every rank's tokens
    base_config.name = config.name + "-shard";
    base_config.token_capacity = R * max_b;
    std::vector<std::unique_ptr<runtime::MoeLayer>> base;
    std::vector<CUevent> start(local.size()), end(local.size());
    for (std::size_t i = 0; i < local.size(); ++i) {
      MOEJIT_CU(cuCtxSetCurrent, local[i].ctx);
      base.push_back(std::make_unique<runtime::MoeLayer>(
          base_config, runtime::expert_shard(models[i].weights->device(), config, local[i].rank, R)));
      MOEJIT_CU(cuEventCreate, &start[i], CU_EVENT_DEFAULT);
      MOEJIT_CU(cuEventCreate, &end[i], CU_EVENT_DEFAULT);
    }
    const AbortOnThrow abort_on_throw(ranks);
    ranks.setup_workspaces(models[0].ep->workspace_bytes(), *o.peers, o.rank_timeout,
                           runtime::query_device(local[0].device).target_name());
    for (const int B : o.batches) {
      const int T = R * B;
      std::vector<std::vector<RankSet>> sets(local.size());
      std::vector<double> touched(local.size(), 0.0), ep_bytes(local.size(), 0.0);
      const bool pull = models[0].ep->plan(B).ep.has(contract::kEpPull);
      for (int si = 0; si < kSets; ++si) {
        const oracle::RandomInputs in =
            oracle::random_inputs(p, T, oracle::RoutingKind::uniform, seed + 1000003ull * B + si);
        for (std::size_t i = 0; i < local.size(); ++i) {
          const int r = local[i].rank;
          MOEJIT_CU(cuCtxSetCurrent, local[i].ctx);
          RankSet s;
          s.xq = upload_rows(in.xq.elements, std::size_t(r) * B, B, H);
          s.xs = upload_rows(in.xq.scales, std::size_t(r) * B, B, H / 32);
          s.ids = upload_rows(in.routing.ids, std::size_t(r) * B, B, k);
          s.w = upload_rows(in.routing.weights, std::size_t(r) * B, B, k);
          const oracle::BaselineRoutes b = oracle::baseline_routes(in.routing, p.experts, R, r);
          s.base_ids = upload(b.ids);
          s.base_w = upload(b.weights);
          s.touched = b.touched;
          s.traffic = oracle::ep_traffic(in.routing, p.experts, R, r, B, int(k));
          touched[i] += double(s.touched) / kSets;
          ep_bytes[i] += s.traffic.bytes(int(H), pull) / kSets;
          sets[i].push_back(std::move(s));
        }
      }
      std::vector<DeviceBuffer> y, x_all, xs_all, y_part, x_rep, xs_rep, y_recv;
      for (std::size_t i = 0; i < local.size(); ++i) {
        MOEJIT_CU(cuCtxSetCurrent, local[i].ctx);
        y.emplace_back(std::size_t(B) * H * 2);
        x_all.emplace_back(std::size_t(T) * H);
        xs_all.emplace_back(std::size_t(T) * H / 32);
        y_part.emplace_back(std::size_t(T) * H * 2);
        // The all-to-all baseline: this rank's rows once per destination, and every rank's partial rows of its
        // own tokens.
        x_rep.emplace_back(a2a ? std::size_t(T) * H : 0);
        xs_rep.emplace_back(a2a ? std::size_t(T) * H / 32 : 0);
        y_recv.emplace_back(a2a ? std::size_t(T) * H * 2 : 0);
      }
      // Destroyed before the buffers above: their frees would wait on a collective whose peer is gone.
      const AbortOnThrow abort_on_throw_b(ranks);
      auto ep_args = [&](std::size_t i, int si) {
        const RankSet& s = sets[i][si];
        runtime::MoeForwardArgs a{s.xq.ptr(), s.xs.ptr(), 0, s.ids.ptr(), s.w.ptr(), y[i].ptr(), B};
        a.workspace = local[i].ws;
        return a;
      };
      auto ep_forward = [&](int si) {
        for (std::size_t i = 0; i < local.size(); ++i) {
          MOEJIT_CU(cuCtxSetCurrent, local[i].ctx);
          MOEJIT_CU(cuEventRecord, start[i], local[i].stream);
          models[i].ep->forward(ep_args(i, si), local[i].stream);
          MOEJIT_CU(cuEventRecord, end[i], local[i].stream);
        }
      };
      // One collective over every local rank, as one group (the x all-gather is two: NCCL runs them together).
      auto collective = [&](auto&& call) {
        ranks.check(ranks.api().ncclGroupStart(), "ncclGroupStart");
        for (std::size_t i = 0; i < local.size(); ++i) {
          MOEJIT_CU(cuCtxSetCurrent, local[i].ctx);
          call(i);
        }
        ranks.check(ranks.api().ncclGroupEnd(), "ncclGroupEnd");
      };
      // Both baselines' middle: the one-GPU layer of each rank's experts over every rank's tokens (x_all).
      auto base_layer = [&](int si) {
        for (std::size_t i = 0; i < local.size(); ++i) {
          MOEJIT_CU(cuCtxSetCurrent, local[i].ctx);
          const RankSet& s = sets[i][si];
          base[i]->forward({x_all[i].ptr(), xs_all[i].ptr(), 0, s.base_ids.ptr(), s.base_w.ptr(), y_part[i].ptr(), T},
                           local[i].stream);
        }
      };
      auto base_forward = [&](int si) {
        for (std::size_t i = 0; i < local.size(); ++i) {
          MOEJIT_CU(cuCtxSetCurrent, local[i].ctx);
          MOEJIT_CU(cuEventRecord, start[i], local[i].stream);
        }
        collective([&](std::size_t i) {
          const RankSet& s = sets[i][si];
          ranks.check(
              ranks.api().ncclAllGather(reinterpret_cast<void*>(s.xq.ptr()), reinterpret_cast<void*>(x_all[i].ptr()),
                                        B * H, ncclUint8, local[i].comm, local[i].stream),
              "ncclAllGather (x rows)");
          ranks.check(
              ranks.api().ncclAllGather(reinterpret_cast<void*>(s.xs.ptr()), reinterpret_cast<void*>(xs_all[i].ptr()),
                                        B * H / 32, ncclUint8, local[i].comm, local[i].stream),
              "ncclAllGather (x scales)");
        });
        base_layer(si);
        collective([&](std::size_t i) {
          ranks.check(ranks.api().ncclReduceScatter(reinterpret_cast<void*>(y_part[i].ptr()),
                                                    reinterpret_cast<void*>(y[i].ptr()), B * H, ncclBfloat16, ncclSum,
                                                    local[i].comm, local[i].stream),
                      "ncclReduceScatter (y)");
        });
        for (std::size_t i = 0; i < local.size(); ++i) {
          MOEJIT_CU(cuCtxSetCurrent, local[i].ctx);
          MOEJIT_CU(cuEventRecord, end[i], local[i].stream);
        }
      };
      auto a2a_forward = [&](int si) {
        for (std::size_t i = 0; i < local.size(); ++i) {
          MOEJIT_CU(cuCtxSetCurrent, local[i].ctx);
          MOEJIT_CU(cuEventRecord, start[i], local[i].stream);
          const RankSet& s = sets[i][si];
          for (int d = 0; d < R; ++d) {
            MOEJIT_CU(cuMemcpyDtoDAsync, x_rep[i].ptr() + std::size_t(d) * B * H, s.xq.ptr(), std::size_t(B) * H,
                      local[i].stream);
            MOEJIT_CU(cuMemcpyDtoDAsync, xs_rep[i].ptr() + std::size_t(d) * B * H / 32, s.xs.ptr(),
                      std::size_t(B) * H / 32, local[i].stream);
          }
        }
        collective([&](std::size_t i) {
          ranks.check(
              ranks.api().ncclAlltoAll(reinterpret_cast<void*>(x_rep[i].ptr()), reinterpret_cast<void*>(x_all[i].ptr()),
                                       std::size_t(B) * H, ncclUint8, local[i].comm, local[i].stream),
              "ncclAlltoAll (x rows)");
          ranks.check(ranks.api().ncclAlltoAll(reinterpret_cast<void*>(xs_rep[i].ptr()),
                                               reinterpret_cast<void*>(xs_all[i].ptr()), std::size_t(B) * H / 32,
                                               ncclUint8, local[i].comm, local[i].stream),
                      "ncclAlltoAll (x scales)");
        });
        base_layer(si);
        collective([&](std::size_t i) {
          ranks.check(ranks.api().ncclAlltoAll(reinterpret_cast<void*>(y_part[i].ptr()),
                                               reinterpret_cast<void*>(y_recv[i].ptr()), std::size_t(B) * H,
                                               ncclBfloat16, local[i].comm, local[i].stream),
                      "ncclAlltoAll (y rows)");
        });
        for (std::size_t i = 0; i < local.size(); ++i) {
          MOEJIT_CU(cuCtxSetCurrent, local[i].ctx);
          CUdeviceptr parts = y_recv[i].ptr(), out = y[i].ptr();
          unsigned long long n = std::size_t(B) * H;
          int r = R;
          void* args[] = {&parts, &out, &n, &r};
          rank_sum->launch(
              runtime::LaunchDims{static_cast<unsigned>(std::min<std::size_t>((n + 255) / 256, 1024)), 256, 0},
              local[i].stream, args);
          MOEJIT_CU(cuEventRecord, end[i], local[i].stream);
        }
      };
      // Each local rank's median forward, and the NVLink bytes its GPU sent and received a forward (-1: no counters).
      struct Measured {
        std::vector<double> median_us, link_bytes;
      };
      auto measure = [&](auto&& forward) {
        const Watchdog guard(kTimedStepTimeout, fmt::format("{} B = {}: a timed loop", model, B), kExitRankGone);
        for (int n = 0; n < kWarmup; ++n) forward(n % kSets);
        for (std::size_t i = 0; i < local.size(); ++i) {
          MOEJIT_CU(cuCtxSetCurrent, local[i].ctx);
          MOEJIT_CU(cuStreamSynchronize, local[i].stream);
        }
        std::vector<NvlinkCounters::Bytes> before;
        for (const auto& c : links) before.push_back(c ? c->read() : NvlinkCounters::Bytes{});
        std::vector<std::vector<double>> us(local.size());
        for (int n = 0; n < kIters; ++n) {
          forward(n % kSets);
          for (std::size_t i = 0; i < local.size(); ++i) {
            MOEJIT_CU(cuEventSynchronize, end[i]);
            us[i].push_back(elapsed_ms(start[i], end[i]) * 1e3);
          }
        }
        Measured m;
        for (std::size_t i = 0; i < local.size(); ++i) {
          m.median_us.push_back(percentile(us[i], 0.5));
          if (!links[i]) {
            m.link_bytes.push_back(-1);
            continue;
          }
          const NvlinkCounters::Bytes after = links[i]->read();
          m.link_bytes.push_back((after.tx + after.rx - before[i].tx - before[i].rx) / kIters);
        }
        return m;
      };
      // Every rank's kernels built and loaded before any rank launches (docs/expert-parallelism.md), the
      // baseline's too: compiling inside a timed loop would stand in its watchdog's minutes while the peer waits.
      for (std::size_t i = 0; i < local.size(); ++i) {
        MOEJIT_CU(cuCtxSetCurrent, local[i].ctx);
        models[i].ep->launches(ep_args(i, 0), local[i].stream);
        const RankSet& s0 = sets[i][0];
        base[i]->launches({x_all[i].ptr(), xs_all[i].ptr(), 0, s0.base_ids.ptr(), s0.base_w.ptr(), y_part[i].ptr(), T},
                          local[i].stream);
        if (a2a) {  // the sum loaded into this context (n = 0: it touches nothing)
          CUdeviceptr none = 0;
          unsigned long long n = 0;
          int r = R;
          void* args[] = {&none, &none, &n, &r};
          rank_sum->launch(runtime::LaunchDims{1, 32, 0}, local[i].stream, args);
          MOEJIT_CU(cuStreamSynchronize, local[i].stream);
        }
      }
      ranks.barrier();
      const Measured ep_m = measure(ep_forward);
      if (auto lost = lost_rank(ranks)) {
        emit(o, fmt::format("{} B = {}: {}", model, B, *lost), nlohmann::json{{"lost_rank", *lost}}.dump());
        ranks.abandon();
        return kExitLostRank;
      }
      const Measured base_m = measure(base_forward);
      const Measured a2a_m = a2a ? measure(a2a_forward) : Measured{};
      const double expert_bytes_ = expert_bytes(p);
      constexpr int kStats = 7;
      std::vector<std::vector<double>> mine;
      for (std::size_t i = 0; i < local.size(); ++i)
        mine.push_back({ep_m.median_us[i], base_m.median_us[i], touched[i] * expert_bytes_ / (bw[i] * 1e9) * 1e6,
                        ep_bytes[i], ep_m.link_bytes[i], base_m.link_bytes[i], a2a ? a2a_m.median_us[i] : -1.0});
      const std::vector<double> all = all_gather(ranks, mine);
      if (!printer) continue;
      // The step: the slowest rank's median; the floor: the largest rank's; bytes: a rank's mean (NVLink: its
      // GPU's sent + received, -1 where a GPU had no counters).
      double ep = 0, bs = 0, floor = 0, bytes = 0, ep_link = 0, base_link = 0, a2a_us = a2a ? 0 : -1;
      for (int r = 0; r < R; ++r) {
        const double* v = &all[kStats * r];
        ep = std::max(ep, v[0]);
        bs = std::max(bs, v[1]);
        if (a2a) a2a_us = std::max(a2a_us, v[6]);
        floor = std::max(floor, v[2]);
        bytes += v[3] / R;
        ep_link = v[4] < 0 || ep_link < 0 ? -1 : ep_link + v[4] / R;
        base_link = v[5] < 0 || base_link < 0 ? -1 : base_link + v[5] / R;
      }
      auto mb = [](double b) { return b < 0 ? std::string("n/a") : fmt::format("{:.2f}", b / 1e6); };
      auto gbs = [](double b, double us) { return b < 0 ? std::string("n/a") : fmt::format("{:.1f}", b / us / 1e3); };
      const double base_bytes = double(R - 1) * B * (H + H / 32.0 + 2.0 * H);
      const std::string modes = codegen::ep_mode_names(models[0].ep->plan(B).ep.mode);
      // Against the faster baseline (the all-to-all one runs where the loaded NCCL has ncclAlltoAll).
      const double best = a2a_us > 0 ? std::min(bs, a2a_us) : bs;
      const std::string a2a_text = a2a_us > 0 ? fmt::format("{:.1f}", a2a_us) : std::string("n/a");
      emit(o,
           fmt::format("{:<13} {:>2} {:>4} {:>9.1f} {:>9.1f} {:>6.1f}% {:>9} {:>9.1f} {:>6.2f}x {:>8.2f} {:>8} {:>7} "
                       "{:>8.2f} {:>8} {:>7}  {}",
                       model, R, B, floor, ep, 100.0 * floor / ep, a2a_text, bs, best / ep, bytes / 1e6, mb(ep_link),
                       gbs(ep_link, ep), base_bytes / 1e6, mb(base_link), gbs(base_link, bs), modes),
           nlohmann::json{{"model", model},
                          {"R", R},
                          {"B", B},
                          {"floor_us", floor},
                          {"ep_us", ep},
                          {"a2a_us", a2a_us > 0 ? nlohmann::json(a2a_us) : nlohmann::json(nullptr)},
                          {"base_us", bs},
                          {"speedup", best / ep},
                          {"ep_bytes_per_rank", bytes},
                          {"ep_nvlink_bytes_per_gpu", ep_link},
                          {"base_bytes_per_rank", base_bytes},
                          {"base_nvlink_bytes_per_gpu", base_link},
                          {"ep_modes", modes}}
               .dump());
    }
    ranks.free_workspaces();
    for (std::size_t i = 0; i < local.size(); ++i) {
      MOEJIT_CU(cuCtxSetCurrent, local[i].ctx);
      models[i].ep->release_stream(local[i].stream);
      base[i]->release_stream(local[i].stream);
      MOEJIT_CU(cuEventDestroy, start[i]);
      MOEJIT_CU(cuEventDestroy, end[i]);
    }
  }
  return 0;
}

}  // namespace moejit::bench
