#include "tools/models.hpp"

#include <fmt/format.h>

namespace moejit::tools {

BuiltinModel builtin_model(const std::string& name) {
  if (name == "glm5.2") return {name, {256, 8, 6144, 2048, 10.0f}};
  if (name == "dsv4.1-flash") return {name, {384, 6, 5120, 2304, 10.0f}};
  throw UsageError(fmt::format("--model: '{}' is not one of glm5.2, dsv4.1-flash", name));
}

}  // namespace moejit::tools
