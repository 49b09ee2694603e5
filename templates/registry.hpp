#pragma once
// The embedded kernel templates: every templates/*.cuh, by file name.

#include <span>
#include <string_view>
#include <vector>

namespace moejit::templates {

struct TemplateFile {
  std::string_view name;   // file name, also the include name ("mx_types.cuh")
  std::string_view bytes;  // exact file contents
};

// Every embedded template, sorted by name.
std::span<const TemplateFile> all();

// The template called `name`, or nullptr.
const TemplateFile* find(std::string_view name);

// `name` and every template it includes (transitively, through `#include "x.cuh"`),
// in a stable order: the set a compile of `name` depends on, and so the bytes a
// cache key must cover. Throws std::invalid_argument naming a missing template.
std::vector<const TemplateFile*> closure(std::string_view name);

}  // namespace moejit::templates
