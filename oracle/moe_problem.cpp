#include "oracle/moe_problem.hpp"

#include <limits>

namespace moejit::oracle {

reference::MoeProblem problem_of(const codegen::MoeConfig& config) {
  return {config.local_experts(), config.top_k, config.hidden, config.intermediate,
          config.swiglu_clamp.value_or(std::numeric_limits<float>::infinity())};
}

}  // namespace moejit::oracle
