#pragma once
// Residency of a role's grid (seed §4.2, eq. 6), checked with the driver's
// occupancy at the role's exact threads and dynamic SMEM before any graph is
// built or launched. A persistent role whose CTAs wait on each other must be
// resident all at once, or the first wait that depends on an unscheduled CTA
// never returns.

#include <stdexcept>
#include <string>

#include "runtime/loaded_kernel.hpp"

namespace moejit::runtime {

class ResidencyError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

// "" when the role fits; else the reason (pure: unit-tested without a GPU), e.g.
// "role compute: grid 600 exceeds its resident capacity 396 = 3 blocks/SM x 132 SMs
// at 160 threads and 77448 B of dynamic SMEM (eq. 6)". A role that is not
// `co_resident` (its CTAs never wait on each other) only needs one CTA per SM.
std::string residency_problem(const std::string& role, long long grid, int blocks_per_sm, int sms, int threads,
                              int dynamic_smem, bool co_resident);

// Throws ResidencyError with residency_problem()'s message when it is not "".
void require_residency(const std::string& role, long long grid, int blocks_per_sm, int sms, int threads,
                       int dynamic_smem, bool co_resident);

// The driver's active CTAs per SM for `kernel` at (threads, dynamic_smem) in
// the current context.
int role_blocks_per_sm(const LoadedKernel& kernel, int threads, int dynamic_smem);

}  // namespace moejit::runtime
