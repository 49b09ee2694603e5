#pragma once
// The GPU matrix's runner: one shape's layers (a layer per compute path, on
// the same weights) checked against the CPU references over batch sizes x
// routings, every forward twice (oracle::check_forward). Shared by the model
// and edge cases (test_moe_gpu.cpp) and the schedules' (test_moe_schedules_gpu.cpp).
#include <iterator>
#include <optional>
#include <vector>

#include "codegen/moe_config.hpp"
#include "codegen/moe_launch_plan.hpp"
#include "oracle/moe_check.hpp"

namespace moejit::gpu_test {

struct Shape {
  const char* name;
  codegen::MoeConfig config;
};

struct Matrix {
  bool input_bf16 = false;
  oracle::WeightScales scales;
  oracle::XStyle x;
  std::vector<codegen::ComputePath> paths = {codegen::ComputePath::fast, codegen::ComputePath::exact};
  double dense_bar = 0.97;
  // The weights hold code-0 blocks with nonzero values: the fast path's layer must run its kernels that decode
  // code 0 as 2^-127 (the transform kernel finds them), every other layer those that read it as 0.0.
  bool subnormal_scales = false;
  std::optional<codegen::Schedule> schedule;  // unset: as planned
  int consumer_groups = 0;                    // 0: as planned
  std::optional<bool> paired_rows;            // unset: as planned
};

// The failed checks (each also a doctest CHECK failure, with its summary).
int run_matrix(const Shape& shape, const std::vector<int>& batches, const std::vector<oracle::RoutingKind>& routings,
               const Matrix& m = {});

// MOEJIT_GPU_BATCHES (e.g. "128,256") runs the model matrices on those batch
// sizes only, so the whole matrix can be split across runs; the CPU
// references dominate at large B.
std::vector<int> model_batches();

// W4A16: BF16 x, on the one atom that runs it (the exact path's).
Matrix w4a16_matrix();

inline const std::vector<oracle::RoutingKind> k_routings(std::begin(oracle::k_all_routings),
                                                         std::end(oracle::k_all_routings));

}  // namespace moejit::gpu_test
