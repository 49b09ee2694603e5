#pragma once
// moejit_ep_nccl's commands, run by every rank process (or, with
// --single-process, by one process for all ranks): what they share.

#include <chrono>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "bench/ep_nccl/nccl_ranks.hpp"
#include "codegen/moe_config.hpp"
#include "oracle/moe_check.hpp"
#include "runtime/moe_layer.hpp"

namespace moejit::bench {

struct EpNcclOptions {
  std::string command;  // check, bench or soak
  std::vector<std::string> models = {"glm5.2", "dsv4.1-flash"};
  std::vector<int> batches = {1, 2, 4, 8, 16, 32, 64, 128, 256};
  std::vector<int> routings = {0, 1, 2, 3, 4, 5};  // oracle::ep_inputs
  int replays = 100;                               // check: more forwards of the uniform routing, bitwise equal
  std::optional<PeerTable> peers;                  // unset: window where the loaded NCCL allows it, else ipc
  std::uint64_t seed = 0;                          // every rank draws the same global inputs from it
  std::chrono::milliseconds rank_timeout{2000};    // the workspace header's cross-rank wait
  std::chrono::milliseconds init_timeout{120000};  // the unique id and the communicator
  int forwards = 200;                              // soak
  int die_rank = -1, die_after = 0;                // soak: that rank kills itself after launching that forward
  int deadline_s = 0;                              // --launch: ranks still running after this are killed (0: none)
  bool json = false;
  // Processes: --launch R starts R ranks of this program; a rank runs with --rank r --ranks R --id-file F;
  // --single-process R drives R GPUs from one process.
  int launch = 0, single = 0, rank = -1, ranks = 0;
  std::string id_file;
};

// Exit codes: 0 done and every check passed; 1 a check failed or an error; 3 a rank was lost (a cross-rank wait
// gave up: the rank says which).
inline constexpr int kExitLostRank = 3;

// A model on each local rank's GPU: the random checkpoint of all E experts (drawn from the seed: the same on
// every rank) and the rank's expert-parallel layer of its E / R of them.
struct RankModel {
  std::unique_ptr<oracle::RandomWeights> weights;
  std::unique_ptr<runtime::MoeLayer> ep;
};
std::vector<RankModel> load_model(NcclRanks& ranks, const codegen::MoeConfig& global, std::uint64_t seed,
                                  const EpNcclOptions& o);
// The seed of a model's checkpoint and of its cases, from the run's.
std::uint64_t model_seed(const EpNcclOptions& o, const std::string& model);
// After a forward of every local rank: the first lost-rank error (runtime::rank_wait_error), if any.
std::optional<std::string> lost_rank(NcclRanks& ranks);

int run_check(NcclRanks& ranks, const EpNcclOptions& o);
int run_soak(NcclRanks& ranks, const EpNcclOptions& o);
int run_bench(NcclRanks& ranks, const EpNcclOptions& o);

// One result line: text, or with --json one JSON object a line (JSON Lines).
void emit(const EpNcclOptions& o, const std::string& text, const std::string& json);

}  // namespace moejit::bench
