#pragma once
// The operator a layer config describes, as the CPU references take it. It
// lives here, not on MoeLayer, so the runtime's public API names no oracle type.

#include "codegen/moe_config.hpp"
#include "oracle/moe_reference.hpp"

namespace moejit::oracle {

// One rank's experts (L = E / R), and the SwiGLU clamp (none: +inf).
reference::MoeProblem problem_of(const codegen::MoeConfig& config);

}  // namespace moejit::oracle
