#pragma once
// The expert-parallel routing matrix: global inputs of R ranks' B tokens each,
// for the partitions of one GPU (tests/gpu/test_ep_gpu.cpp) and R GPUs over
// NCCL (bench/ep_nccl/) alike. Rank r's tokens are [r B, (r + 1) B).

#include <cstdint>
#include <string>

#include "oracle/moe_check.hpp"

namespace moejit::oracle {

// 0-3: the operator's four routings (k_all_routings); 4: the last rank receives nothing (every route on the
// other ranks' experts); 5: rank 0's tokens route only to the last rank's experts (all remote).
inline constexpr int k_ep_routings = 6;
std::string ep_routing_name(int routing);

// Throws std::invalid_argument naming the field where ranks, per_rank_tokens or routing is out of range, or
// where a rank holds fewer experts than top_k (routings 4 and 5 need k distinct experts of one rank's).
RandomInputs ep_inputs(const reference::MoeProblem& p, int ranks, int per_rank_tokens, int routing, std::uint64_t seed);

}  // namespace moejit::oracle
