#include "runtime/residency.hpp"

#include <fmt/format.h>

#include <algorithm>

#include "codegen/occupancy.hpp"

namespace moejit::runtime {

std::string residency_problem(const std::string& role, long long grid, int blocks_per_sm, int sms, int threads,
                              int dynamic_smem, bool co_resident) {
  const std::string at = fmt::format("at {} threads and {} B of dynamic SMEM", threads, dynamic_smem);
  if (blocks_per_sm < 1) return fmt::format("role {}: no CTA can be resident on an SM {}", role, at);
  if (!co_resident) return "";
  const codegen::Residency r = codegen::check_residency(
      fmt::format("role {}", role), static_cast<int>(std::min<long long>(grid, 1 << 30)), blocks_per_sm, sms);
  if (r.ok) return "";
  return fmt::format("role {}: grid {} exceeds its resident capacity {} = {} blocks/SM x {} SMs {} (eq. 6)", role, grid,
                     r.capacity, blocks_per_sm, sms, at);
}

void require_residency(const std::string& role, long long grid, int blocks_per_sm, int sms, int threads,
                       int dynamic_smem, bool co_resident) {
  if (std::string problem = residency_problem(role, grid, blocks_per_sm, sms, threads, dynamic_smem, co_resident);
      !problem.empty())
    throw ResidencyError(problem);
}

int role_blocks_per_sm(const LoadedKernel& kernel, int threads, int dynamic_smem) {
  CUfunction fn = nullptr;
  MOEJIT_CU(cuKernelGetFunction, &fn, kernel.kernel());
  int blocks = 0;
  MOEJIT_CU(cuOccupancyMaxActiveBlocksPerMultiprocessor, &blocks, fn, threads, static_cast<std::size_t>(dynamic_smem));
  return blocks;
}

}  // namespace moejit::runtime
