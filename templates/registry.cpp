#include "templates/registry.hpp"

#include <algorithm>
#include <stdexcept>
#include <string>

namespace moejit::templates {

const TemplateFile* find(std::string_view name) {
  for (const TemplateFile& f : all())
    if (f.name == name) return &f;
  return nullptr;
}

namespace {
// Names in `#include "name"` lines. Templates only include each other by file name.
std::vector<std::string_view> quoted_includes(std::string_view text) {
  std::vector<std::string_view> out;
  size_t pos = 0;
  while ((pos = text.find("#include", pos)) != std::string_view::npos) {
    size_t open = text.find_first_not_of(" \t", pos + 8);
    pos += 8;
    if (open == std::string_view::npos || text[open] != '"') continue;
    size_t close = text.find('"', open + 1);
    if (close == std::string_view::npos) break;
    out.push_back(text.substr(open + 1, close - open - 1));
  }
  return out;
}
}  // namespace

std::vector<const TemplateFile*> closure(std::string_view name) {
  std::vector<const TemplateFile*> seen;
  std::vector<std::string_view> work{name};
  while (!work.empty()) {
    std::string_view next = work.back();
    work.pop_back();
    const TemplateFile* f = find(next);
    if (!f) throw std::invalid_argument("unknown kernel template '" + std::string(next) + "'");
    if (std::find(seen.begin(), seen.end(), f) != seen.end()) continue;
    seen.push_back(f);
    for (std::string_view inc : quoted_includes(f->bytes)) work.push_back(inc);
  }
  std::sort(seen.begin(), seen.end(), [](const TemplateFile* a, const TemplateFile* b) { return a->name < b->name; });
  return seen;
}

}  // namespace moejit::templates
