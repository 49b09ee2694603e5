#include "oracle/moe_problem.hpp"

#include <limits>

namespace moejit::oracle {

reference::MoeProblem problem_of(const codegen::MoeConfig& config) {
  reference::MoeProblem p{config.local_experts(), config.top_k, config.hidden, config.intermediate,
                          config.swiglu_clamp.value_or(std::numeric_limits<float>::infinity())};
  p.activation = config.activation == codegen::Activation::gpt_oss ? reference::Activation::gpt_oss
                                                                   : reference::Activation::swiglu;
  p.alpha = config.alpha;
  p.interleaved = config.gate_up == codegen::GateUp::interleaved;
  p.shared_expert = config.shared_expert.has_value();
  return p;
}

}  // namespace moejit::oracle
