#pragma once
// The built-in model configurations (seed Table 4).

#include <string>

#include "runtime/moe_reference.hpp"
#include "tools/cli_args.hpp"

namespace moejit::tools {

struct BuiltinModel {
  std::string name;
  reference::MoeProblem problem;
};

// glm5.2: H=6144, I=2048, E=256, k=8; dsv4.1-flash: H=5120, I=2304, E=384, k=6 (clamp 10).
// Throws UsageError naming the allowed models.
BuiltinModel builtin_model(const std::string& name);

}  // namespace moejit::tools
