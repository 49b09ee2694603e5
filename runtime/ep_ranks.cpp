#include "runtime/ep_ranks.hpp"

#include <fmt/format.h>

#include <chrono>
#include <cstddef>
#include <thread>

#include "runtime/driver_api.hpp"
#include "runtime/moe_layer.hpp"
#include "runtime/moe_layer_detail.hpp"
#include "templates/moe_contract.cuh"

namespace moejit::runtime {

const std::size_t k_peer_table_offset = offsetof(contract::MoeHeader, peers);

namespace {
void check_rank(CUdeviceptr ws, std::int64_t bytes, int rank, int ranks, std::chrono::nanoseconds timeout) {
  if (ranks < 2 || ranks > contract::kMaxRanks)
    throw InvalidInput("ranks",
                       fmt::format("ranks = {} is outside the allowed range [2, {}]", ranks, contract::kMaxRanks));
  if (rank < 0 || rank >= ranks)
    throw InvalidInput("rank", fmt::format("rank = {} is outside the allowed range [0, {}]", rank, ranks - 1));
  if (ws == 0 || ws % 256 != 0)
    throw InvalidInput("ws", fmt::format("ws = 0x{:x} is invalid: must be a non-null 256-byte aligned workspace", ws));
  if (timeout.count() <= 0)
    throw InvalidInput("timeout", fmt::format("timeout = {} ns is invalid: must be > 0", timeout.count()));
  if (bytes < static_cast<std::int64_t>(sizeof(contract::MoeHeader)))
    throw InvalidInput("bytes", fmt::format("bytes = {} is invalid: a workspace holds at least its {}-byte header",
                                            bytes, sizeof(contract::MoeHeader)));
}

contract::MoeHeader header_of(int rank, int ranks, std::chrono::nanoseconds timeout) {
  contract::MoeHeader h{};
  h.rank = rank;
  h.ranks = ranks;
  h.timeout_ns = timeout.count();
  return h;
}

void write_header(CUdeviceptr ws, std::int64_t bytes, const contract::MoeHeader& h, CUstream stream) {
  // The zeroing below writes `bytes` from ws: never past the allocation (a workspace size of another config).
  detail::require_device_bytes("bytes", "ws", ws, static_cast<std::uint64_t>(bytes), "the rank workspace");
  MOEJIT_CU(cuMemsetD8Async, ws, 0, static_cast<std::size_t>(bytes), stream);
  // From pageable memory: the copy completes before the call returns.
  MOEJIT_CU(cuMemcpyHtoDAsync, ws, &h, sizeof(h), stream);
  MOEJIT_CU(cuStreamSynchronize, stream);
}
}  // namespace

void init_rank_header(CUdeviceptr ws, std::int64_t bytes, int rank, int ranks, std::chrono::nanoseconds timeout,
                      CUstream stream) {
  check_rank(ws, bytes, rank, ranks, timeout);
  write_header(ws, bytes, header_of(rank, ranks, timeout), stream);
}

void init_rank_workspace(CUdeviceptr ws, std::int64_t bytes, int rank, std::span<const CUdeviceptr> peers,
                         std::chrono::nanoseconds timeout, CUstream stream) {
  const int ranks = static_cast<int>(peers.size());
  if (ranks < 2 || ranks > contract::kMaxRanks)
    throw InvalidInput("peers", fmt::format("peers holds {} workspaces: must be in [2, {}] (one per rank)", ranks,
                                            contract::kMaxRanks));
  check_rank(ws, bytes, rank, ranks, timeout);
  if (peers[rank] != ws)
    throw InvalidInput("peers", fmt::format("peers[{}] = 0x{:x} is invalid: it must be this rank's workspace 0x{:x}",
                                            rank, peers[rank], ws));
  for (int s = 0; s < ranks; ++s)
    if (peers[s] == 0 || peers[s] % 256 != 0)
      throw InvalidInput("peers", fmt::format("peers[{}] = 0x{:x} is invalid: must be a non-null 256-byte aligned "
                                              "workspace",
                                              s, peers[s]));
  contract::MoeHeader h = header_of(rank, ranks, timeout);
  for (int s = 0; s < ranks; ++s) h.peers[s] = peers[s];
  write_header(ws, bytes, h, stream);
}

CheckpointWeightsDevice expert_shard(const CheckpointWeightsDevice& all, const codegen::MoeConfig& global, int rank,
                                     int ranks) {
  if (ranks < 1 || global.experts % ranks != 0)
    throw InvalidInput("ranks",
                       fmt::format("ranks = {} is invalid: the {} experts must split evenly", ranks, global.experts));
  if (rank < 0 || rank >= ranks)
    throw InvalidInput("rank", fmt::format("rank = {} is outside the allowed range [0, {}]", rank, ranks - 1));
  // Layouts of CheckpointWeightsDevice: [E][2I][H/2], [E][2I][H/32], [E][H][I/2], [E][H][I/32]; BF16 [E][2I], [E][H].
  const std::uint64_t e0 = std::uint64_t(rank) * (global.experts / ranks);
  const std::uint64_t i = global.intermediate, h = global.hidden;
  CheckpointWeightsDevice d = all;
  d.w1 += e0 * 2 * i * h / 2, d.s1 += e0 * 2 * i * h / 32;
  d.w2 += e0 * h * i / 2, d.s2 += e0 * h * i / 32;
  if (d.b1) d.b1 += e0 * 2 * i * 2;
  if (d.b2) d.b2 += e0 * h * 2;
  return d;
}

std::optional<std::string> rank_wait_error(CUdeviceptr ws, CUstream stream) {
  MOEJIT_CU(cuStreamSynchronize, stream);
  contract::MoeHeader h{};
  MOEJIT_CU(cuMemcpyDtoH, &h, ws, sizeof(h));
  // Another rank's grid may still be writing the rank and value of an error it claimed here (ep_claim): they
  // land within microseconds; a second is far past that.
  for (int tries = 0; h.error == contract::kEpWaitClaimed && tries < 1000; ++tries) {
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
    MOEJIT_CU(cuMemcpyDtoH, &h, ws, sizeof(h));
  }
  const double ms = static_cast<double>(h.timeout_ns) / 1e6;
  switch (h.error) {
    case contract::kEpWaitNone: return std::nullopt;
    case contract::kEpWaitClaimed:
      return fmt::format(
          "rank {}: a rank claimed this workspace's error word and did not finish writing it within "
          "a second (its GPU stopped?); this rank had finished {} forwards",
          h.rank, h.epoch);
    case contract::kEpWaitDispatch:
      return fmt::format(
          "rank {}: rank {} did not dispatch its tokens within {} ms (its `dispatched` counter stayed "
          "at {}; this rank had finished {} forwards)",
          h.rank, h.error_rank, ms, h.error_value, h.epoch);
    case contract::kEpWaitCompute:
      return fmt::format(
          "rank {}: rank {}'s compute role did not finish the forward within {} ms (its `epoch` "
          "counter stayed at {}; this rank had finished {} forwards)",
          h.rank, h.error_rank, ms, h.error_value, h.epoch);
    case contract::kEpWaitSkew:
      return fmt::format(
          "rank {}: rank {}'s counter was past this forward's ({}; this rank had finished {} "
          "forwards): the ranks ran different numbers of forwards",
          h.rank, h.error_rank, h.error_value, h.epoch);
    case contract::kEpWaitPeer:
      return fmt::format(
          "rank {}: rank {} gave up on the forward (its error {}), so this rank's y is not its "
          "result; set every rank up again",
          h.rank, h.error_rank, h.error_value);
    case contract::kEpWaitSetup:
      return fmt::format("rank {}: the workspace is set up for {} ranks, not the layer's (init_rank_workspace)", h.rank,
                         h.error_value);
    case contract::kEpWaitPieces:
      return fmt::format(
          "rank {}: its compute grid gave up within {} ms on its own split-K pieces or GEMM2 inputs, "
          "which CTAs that had given up on another rank never wrote",
          h.rank, ms);
    case contract::kEpWaitPull:
      return fmt::format(
          "rank {}: its dispatch role did not finish pulling the other ranks' rows within {} ms (its "
          "`pulled` counter stayed at {}; this rank had finished {} forwards)",
          h.rank, ms, h.error_value, h.epoch);
    case contract::kEpWaitGate:
      return fmt::format(
          "rank {}: the compute CTA that scans the peers did not open this rank's gate within {} ms (its "
          "`gate` counter stayed at {}; this rank had finished {} forwards)",
          h.rank, ms, h.error_value, h.epoch);
    default:
      return fmt::format("rank {}: the workspace header holds an unknown wait error {} (rank {}, value {})", h.rank,
                         h.error, h.error_rank, h.error_value);
  }
}

}  // namespace moejit::runtime
