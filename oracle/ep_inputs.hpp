#pragma once
// The expert-parallel routing matrix: global inputs of R ranks' B tokens each,
// for the partitions of one GPU (tests/gpu/test_ep_gpu.cpp) and R GPUs over
// NCCL (bench/ep_nccl/) alike. Rank r's tokens are [r B, (r + 1) B).

#include <cstdint>
#include <string>
#include <vector>

#include "oracle/moe_check.hpp"

namespace moejit::oracle {

// 0-3: the operator's four routings (k_all_routings); 4: the last rank receives nothing (every route on the
// other ranks' experts); 5: rank 0's tokens route only to the last rank's experts (all remote).
inline constexpr int k_ep_routings = 6;
std::string ep_routing_name(int routing);

// Throws std::invalid_argument naming the field where ranks, per_rank_tokens or routing is out of range, or
// where a rank holds fewer experts than top_k (routings 4 and 5 need k distinct experts of one rank's).
RandomInputs ep_inputs(const reference::MoeProblem& p, int ranks, int per_rank_tokens, int routing, std::uint64_t seed);

// The baseline of the expert-parallel benches (moejit_bench_ep, moejit_ep_nccl) on rank `rank`: the one-GPU
// layer of its E / R experts runs every rank's tokens. Its routes, local ids: a route to another rank's expert
// gets weight 0 on one of the rank's touched experts, the least loaded first (lowest id on a tie), so that it
// adds no weight bytes unless that expert then needs another token tile (expert 0 where the rank touches none).
struct BaselineRoutes {
  std::vector<std::int32_t> ids;
  std::vector<float> weights;
  int touched = 0;  // the rank's experts some route reaches
};
BaselineRoutes baseline_routes(const reference::Routing& global, int experts, int ranks, int rank);

// What rank `rank`'s forward moves between GPUs (per_rank_tokens tokens a rank, global routes): the routes of
// other ranks' tokens it computes, those tokens, and the routes of its tokens that others compute.
struct EpTraffic {
  double pulled_routes = 0, pulled_tokens = 0, returned_routes = 0;
  // Bytes in and out: an x row (its split MXFP8 rows, 2H, and H/32 scale words) per pulled route, or once per
  // pulled token with the pull cache (contract::kEpPull), and a BF16 output row (2H) per pulled route.
  double bytes(int hidden, bool pull) const {
    return (pull ? pulled_tokens : pulled_routes) * (2.0 * hidden + hidden / 32.0) + pulled_routes * 2.0 * hidden;
  }
};
EpTraffic ep_traffic(const reference::Routing& global, int experts, int ranks, int rank, int per_rank_tokens,
                     int top_k);

}  // namespace moejit::oracle
