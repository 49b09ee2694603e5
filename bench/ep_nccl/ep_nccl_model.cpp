#include <fmt/format.h>

#include <cstdio>

#include "bench/ep_nccl/ep_nccl_runs.hpp"
#include "oracle/moe_problem.hpp"
#include "runtime/driver_api.hpp"
#include "runtime/ep_ranks.hpp"

namespace moejit::bench {

std::uint64_t model_seed(const EpNcclOptions& o, const std::string& model) {
  std::uint64_t h = o.seed ^ 0x9E3779B97F4A7C15ull;
  for (const char c : model) h = (h ^ static_cast<unsigned char>(c)) * 0x100000001B3ull;
  return h;
}

std::vector<RankModel> load_model(NcclRanks& ranks, const codegen::MoeConfig& global, std::uint64_t seed,
                                  const EpNcclOptions& o) {
  const reference::MoeProblem p = oracle::problem_of(global);
  codegen::MoeConfig ep_config = global;
  ep_config.ranks = ranks.ranks();
  std::vector<RankModel> models;
  for (NcclRank& r : ranks.local()) {
    MOEJIT_CU(cuCtxSetCurrent, r.ctx);
    if (!o.json)
      fmt::print("rank {}: {}: drawing the checkpoint of {} experts on GPU {}\n", r.rank, global.name, global.experts,
                 r.device);
    std::fflush(stdout);
    RankModel m;
    m.weights = std::make_unique<oracle::RandomWeights>(oracle::random_weights(p, seed));
    m.ep = std::make_unique<runtime::MoeLayer>(
        ep_config, runtime::expert_shard(m.weights->device(), global, r.rank, ranks.ranks()));
    models.push_back(std::move(m));
  }
  return models;
}

std::optional<std::string> lost_rank(NcclRanks& ranks) {
  std::optional<std::string> first;
  for (NcclRank& r : ranks.local()) {
    MOEJIT_CU(cuCtxSetCurrent, r.ctx);
    auto e = runtime::rank_wait_error(r.ws, r.stream);
    if (e && !first) first = std::move(e);
  }
  return first;
}

}  // namespace moejit::bench
