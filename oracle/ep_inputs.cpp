#include "oracle/ep_inputs.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <random>
#include <set>
#include <stdexcept>
#include <vector>

namespace moejit::oracle {
namespace {
// Tokens first..last-1 get k distinct experts from [lo, hi).
void route_into(RandomInputs& in, int k, int first, int last, int lo, int hi, std::uint64_t seed) {
  std::mt19937_64 rng(seed);
  std::vector<int> pool(hi - lo);
  for (int e = lo; e < hi; ++e) pool[e - lo] = e;
  for (int t = first; t < last; ++t) {
    std::shuffle(pool.begin(), pool.end(), rng);
    for (int j = 0; j < k; ++j) in.routing.ids[t * k + j] = pool[j];
  }
}
}  // namespace

std::string ep_routing_name(int routing) {
  if (routing >= 0 && routing < 4) return std::string(routing_name(k_all_routings[routing]));
  if (routing == 4) return "last-rank-idle";
  if (routing == 5) return "all-remote";
  return fmt::format("routing {}", routing);
}

RandomInputs ep_inputs(const reference::MoeProblem& p, int ranks, int per_rank_tokens, int routing,
                       std::uint64_t seed) {
  if (ranks < 2 || p.experts % ranks != 0)
    throw std::invalid_argument(
        fmt::format("ep_inputs: ranks = {} must be at least 2 and divide experts = {}", ranks, p.experts));
  if (per_rank_tokens < 1)
    throw std::invalid_argument(fmt::format("ep_inputs: per_rank_tokens = {} must be at least 1", per_rank_tokens));
  if (routing < 0 || routing >= k_ep_routings)
    throw std::invalid_argument(fmt::format("ep_inputs: routing = {} is outside [0, {})", routing, k_ep_routings));
  const int per_rank = p.experts / ranks, k = p.top_k, B = per_rank_tokens, R = ranks;
  if (per_rank < k)
    throw std::invalid_argument(fmt::format("ep_inputs: a rank's {} experts are fewer than top_k = {}", per_rank, k));
  const RoutingKind kind = routing < 4 ? k_all_routings[routing] : RoutingKind::uniform;
  RandomInputs in = random_inputs(p, R * B, kind, seed);
  if (routing == 4) route_into(in, k, 0, R * B, 0, (R - 1) * per_rank, seed);
  if (routing == 5) route_into(in, k, 0, B, (R - 1) * per_rank, R * per_rank, seed);
  return in;
}

BaselineRoutes baseline_routes(const reference::Routing& global, int experts, int ranks, int rank) {
  const int per_rank = experts / ranks;
  BaselineRoutes b;
  b.ids.resize(global.ids.size());
  b.weights.resize(global.weights.size());
  std::set<int> mine;
  std::vector<int> load(per_rank, 0);
  for (const int id : global.ids)
    if (id / per_rank == rank) mine.insert(id - rank * per_rank), ++load[id - rank * per_rank];
  b.touched = int(mine.size());
  for (std::size_t i = 0; i < b.ids.size(); ++i) {
    const bool local = global.ids[i] / per_rank == rank;
    int e = local ? global.ids[i] - rank * per_rank : 0;
    if (!local && !mine.empty()) {
      // Piled on one expert they would run more token tiles, each streaming its weights again (at R B <= 4 a
      // tile holds 4 rows: ComputeRole::kTileRows).
      e = *std::min_element(mine.begin(), mine.end(), [&](int x, int y) { return load[x] < load[y]; });
      ++load[e];
    }
    b.ids[i] = e;
    b.weights[i] = local ? global.weights[i] : 0.0f;
  }
  return b;
}

EpTraffic ep_traffic(const reference::Routing& global, int experts, int ranks, int rank, int per_rank_tokens,
                     int top_k) {
  const int per_rank = experts / ranks;
  EpTraffic t;
  std::set<int> tokens;
  for (std::size_t i = 0; i < global.ids.size(); ++i) {
    const int owner = global.ids[i] / per_rank, token = int(i) / top_k, from = token / per_rank_tokens;
    if (owner == rank && from != rank) t.pulled_routes += 1, tokens.insert(token);
    if (from == rank && owner != rank) t.returned_routes += 1;
  }
  t.pulled_tokens = double(tokens.size());
  return t;
}

}  // namespace moejit::oracle
