#include "bench/ep_nccl/rank_sum.hpp"

#include "codegen/emit.hpp"
#include "codegen/nvjitlink_linker.hpp"
#include "codegen/nvrtc_compiler.hpp"

namespace moejit::bench {
namespace {
const char* const k_source = R"(
extern "C" __global__ void moejit_rank_sum(const unsigned short* parts, unsigned short* y, unsigned long long n,
                                           int ranks) {
  const unsigned long long stride = (unsigned long long)gridDim.x * blockDim.x;
  for (unsigned long long i = (unsigned long long)blockIdx.x * blockDim.x + threadIdx.x; i < n; i += stride) {
    float sum = 0.0f;
    for (int r = 0; r < ranks; ++r) sum += __uint_as_float((unsigned)parts[(unsigned long long)r * n + i] << 16);
    const unsigned u = __float_as_uint(sum);
    y[i] = (unsigned short)((u + 0x7FFFu + ((u >> 16) & 1u)) >> 16);  // round to nearest even (finite sums)
  }
}
)";
}  // namespace

std::vector<char> rank_sum_cubin(codegen::Target target) {
  const codegen::PtxResult ptx = codegen::compile_to_ptx({"moejit_rank_sum.cu", k_source, {}}, target);
  return codegen::assemble_cubin(ptx.ptx, target, "moejit_rank_sum.ptx").cubin;
}

}  // namespace moejit::bench
