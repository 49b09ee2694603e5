#pragma once
// The combine of the bench's all-to-all baseline (moejit_ep_nccl bench): ncclAlltoAll has no reduction, so after
// it brings each token's R partial output rows to the token's rank, this kernel adds them: y[i] = sum over r of
// parts[r][i], BF16 in and out, FP32 in between, rounded to nearest even (the reduce-scatter baseline's NCCL
// sums the same rows itself).
#include <vector>

#include "codegen/target.hpp"

namespace moejit::bench {

inline constexpr const char* k_rank_sum_entry = "moejit_rank_sum";

// The kernel's cubin for `target` (NVRTC and nvJitLink; no GPU needed). Its formals: (const u16* parts, u16* y,
// u64 n, int ranks), parts holding ranks arrays of n BF16 values one after another; a grid-stride loop.
std::vector<char> rank_sum_cubin(codegen::Target target);

}  // namespace moejit::bench
