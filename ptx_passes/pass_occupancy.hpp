#pragma once
// `occupancy`: make ptxas plan for the co-residency the planner chose.
//
// `__launch_bounds__(T, N)` reaches the PTX as `.maxntid T` and
// `.minnctapersm N` (NVVM 7 writes `.maxntid T, 1, 1`, NVVM 20 `.maxntid T`).
// The planner decides the co-residency per shape (paper §5.1: CuTe emits
// `.minnctapersm 1` and the runtime rewrites it to the 2 the SMEM budget
// intends), and pins a register ceiling: without one, the allocator's
// rounding can tip a CTA past the register file and halve the co-residency.

#include <string>
#include <vector>

#include "ptx_passes/pass.hpp"

namespace moejit::ptx {

struct OccupancyRule {
  std::string entry;        // empty: the module's only entry
  int expect_min_ctas = 0;  // the `.minnctapersm` the source declared (0: accept any)
  int min_ctas = 0;         // rewrite `.minnctapersm` to this (0: leave it)
  int max_registers = 0;    // insert or replace `.maxnreg` (0: no cap)
};

class OccupancyPass : public Pass {
 public:
  explicit OccupancyPass(std::vector<OccupancyRule> rules) : rules_(std::move(rules)) {}
  std::string_view name() const override { return "occupancy"; }
  Precondition precondition(const Module& m) const override;
  std::vector<Change> run(Module& m) const override;

 private:
  std::vector<OccupancyRule> rules_;
};

}  // namespace moejit::ptx
