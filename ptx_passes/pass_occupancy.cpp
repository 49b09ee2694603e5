#include "ptx_passes/pass_occupancy.hpp"

#include <fmt/format.h>

namespace moejit::ptx {
namespace {
std::vector<llvm::SMLoc> sites_of(const Entry& e, std::string_view directive) {
  std::vector<llvm::SMLoc> out;
  for (const PerfDirective* d : e.find_directives(directive)) out.push_back(d->loc);
  return out;
}

PerfDirective& directive(Entry& e, std::string_view name) {
  for (PerfDirective& d : e.directives)
    if (d.name == name) return d;
  throw std::logic_error("directive vanished");
}

// Replaces the directive's value, keeping its own spacing.
void set_value(Module& m, PerfDirective& d, int value) {
  const size_t digits = d.text.find_first_of("0123456789");
  d.text = m.save(d.text.take_front(digits).str() + std::to_string(value));
  d.values = {value};
  d.written = true;
}
}  // namespace

Precondition OccupancyPass::precondition(const Module&) const {
  for (const OccupancyRule& r : rules_)
    if (r.min_ctas > 0 || r.max_registers > 0) return Precondition::yes();
  return Precondition::no("no co-residency or register cap requested");
}

std::vector<Change> OccupancyPass::run(Module& m) const {
  std::vector<Change> changes;
  for (const OccupancyRule& r : rules_) {
    if (r.min_ctas <= 0 && r.max_registers <= 0) continue;
    Entry& e = single_entry(m, name(), r.entry);
    if (r.min_ctas > 0) {
      expect_count(m, name(), fmt::format("'.minnctapersm' directives in entry '{}'", e.name), 1,
                   sites_of(e, ".minnctapersm"), e.loc);
      PerfDirective& d = directive(e, ".minnctapersm");
      const std::int64_t from = d.values.size() == 1 ? d.values[0] : -1;
      if (r.expect_min_ctas > 0 && from != r.expect_min_ctas)
        fail_at(m, name(),
                fmt::format("entry '{}': expected '.minnctapersm {}' (the source's __launch_bounds__), found '{}'",
                            e.name, r.expect_min_ctas, d.text.str()),
                d.loc);
      if (from == r.min_ctas) {
        changes.push_back({d.loc, fmt::format("{}: .minnctapersm {} kept (already the target)", e.name, from)});
      } else {
        set_value(m, d, r.min_ctas);
        changes.push_back({d.loc, fmt::format("{}: .minnctapersm {} -> {}", e.name, from, r.min_ctas)});
      }
    }
    if (r.max_registers > 0) {
      if (r.max_registers > 255)
        fail_at(m, name(), fmt::format("a register cap of {} is above ptxas' 255", r.max_registers), e.loc);
      const std::vector<llvm::SMLoc> caps = sites_of(e, ".maxnreg");
      if (caps.empty()) {
        const PerfDirective& d =
            m.append_directive(e, fmt::format(".maxnreg {}", r.max_registers), ".maxnreg", {r.max_registers});
        changes.push_back({d.loc, fmt::format("{}: .maxnreg {} inserted", e.name, r.max_registers)});
        continue;
      }
      // Insert or replace: more than one cap is a module this pass does not understand.
      expect_count(m, name(), fmt::format("'.maxnreg' directives in entry '{}' (at most one)", e.name), 1, caps, e.loc);
      PerfDirective& d = directive(e, ".maxnreg");
      const std::int64_t from = d.values.size() == 1 ? d.values[0] : -1;
      set_value(m, d, r.max_registers);
      changes.push_back({d.loc, fmt::format("{}: .maxnreg {} -> {}", e.name, from, r.max_registers)});
    }
  }
  return changes;
}

}  // namespace moejit::ptx
