#pragma once
// Expert parallelism, the host side of the rank workspaces: each of R ranks
// runs its MoeLayer (config.ranks = R, its E / R experts' weights) on its own
// workspace, and the role kernels reach the other ranks' through the peer
// table in the workspace header (templates/moe_ep.cuh has the protocol). How
// the table is filled is the deployment's: partitions of one GPU (every
// workspace is this GPU's memory), NCCL (runtime/nccl/), or the caller.

#include <cuda.h>

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <optional>
#include <span>
#include <string>

#include "runtime/moe_layer.hpp"

namespace moejit::runtime {

// The bounded wait of every cross-rank wait when the caller names none.
inline constexpr std::chrono::milliseconds k_default_rank_timeout{2000};

// Prepares `ws` (`bytes`, the layer's workspace_bytes()) as rank `rank` of
// peers.size() ranks: zeroes it, then writes the header's rank, ranks,
// timeout and peer table, where peers[s] is rank s's workspace as this GPU
// addresses it (peers[rank] == ws). Ordered on `stream`; every rank's must be
// done before any rank's first forward. Throws InvalidInput naming the field.
void init_rank_workspace(CUdeviceptr ws, std::int64_t bytes, int rank, std::span<const CUdeviceptr> peers,
                         std::chrono::nanoseconds timeout, CUstream stream);

// The same without the peer table, for deployments that fill it on the device
// at ws + k_peer_table_offset (NCCL: init_rank_workspace_nccl), ranks u64 entries.
void init_rank_header(CUdeviceptr ws, std::int64_t bytes, int rank, int ranks, std::chrono::nanoseconds timeout,
                      CUstream stream);
extern const std::size_t k_peer_table_offset;

// Rank `rank`'s experts [rank E / R, (rank + 1) E / R) of a checkpoint of all
// E experts on the device (`global`: its config, R = ranks): the same
// buffers, offset to the rank's first expert (biases included).
CheckpointWeightsDevice expert_shard(const CheckpointWeightsDevice& all, const codegen::MoeConfig& global, int rank,
                                     int ranks);

// After `stream` has finished: the first cross-rank wait on `ws` that gave up,
// as a sentence naming this rank, the rank it waited for and the counter
// (contract::EpWait); nothing if every wait was met.
std::optional<std::string> rank_wait_error(CUdeviceptr ws, CUstream stream);

}  // namespace moejit::runtime
