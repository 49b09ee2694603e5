// A program that embeds moejit the way a user does: every public header, and
// moejit_runtime alone on the link line.
//
// The oracle's namespaces are declared first, as aliases of an empty one. A
// public header that declares something in them (`namespace moejit::reference
// {`) or names a type from them (`reference::MoeProblem`) then fails to
// compile here, so no oracle type can creep back into the public API.
namespace moejit_no_oracle {}
namespace moejit {
namespace reference = ::moejit_no_oracle;
namespace mx = ::moejit_no_oracle;
namespace oracle = ::moejit_no_oracle;
}  // namespace moejit

#include "public_headers.hpp"  // generated: runtime/*.hpp, jit/*.hpp

#ifdef MOEJIT_CONSUMER_CONTROL
// The control build (tests/layering/CMakeLists.txt): one oracle header, which must be refused.
#include "oracle/moe_problem.hpp"
#endif

#include <cstdio>

int main() {
  using namespace moejit;
  std::printf("%d public headers, no oracle type\n", MOEJIT_PUBLIC_HEADERS);
  // What an engine does before it has a GPU: check its config and list the
  // kernels a forward of 8 tokens will need (what `precompile` would build).
  const codegen::MoeConfig config = codegen::builtin_model("glm5.2");
  runtime::validate_layer_config(config);
  const std::vector<codegen::KernelSpec> specs =
      codegen::moe_kernel_specs(config, 8, codegen::builtin_profile("h200"), runtime::MoeLayerOptions{}.codegen);
  std::printf("glm5.2 B=8 on h200: %zu kernels\n", specs.size());
  for (const codegen::KernelSpec& spec : specs) std::printf("  %s\n", spec.summary().c_str());
  return specs.empty() ? 1 : 0;
}
