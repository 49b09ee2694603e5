#include "ptx_passes/pass_validate.hpp"

#include <fmt/format.h>

namespace moejit::ptx {
namespace {
std::string describe(const ExpectedFormal& f) {
  std::string decl = f.align ? fmt::format(".align {} {}", f.align, f.type) : f.type;
  if (f.array_size) decl += fmt::format(" [{}]", f.array_size);
  std::string out = fmt::format("'{}{}{}'", decl.empty() ? "" : decl, decl.empty() || f.name.empty() ? "" : " ",
                                f.name.empty() ? "" : f.name);
  if (!f.role.empty()) out += " (" + f.role + ")";
  return out;
}

bool matches(const Param& p, const ExpectedFormal& f) {
  if (!f.name.empty() && p.name != f.name) return false;
  if (f.type.empty()) return true;
  return p.type == f.type && p.align == f.align && p.array_size.value_or(0) == f.array_size;
}
}  // namespace

bool opcode_matches(llvm::StringRef opcode, llvm::StringRef pattern) {
  return !pattern.empty() && opcode.starts_with(pattern) &&
         (opcode.size() == pattern.size() || opcode[pattern.size()] == '.');
}

Precondition ValidatePass::precondition(const Module&) const {
  if (abis_.empty()) return Precondition::no("no kernel ABI declared");
  return Precondition::yes();
}

std::vector<Change> ValidatePass::run(Module& m) const {
  std::vector<Change> out;
  for (const EntryAbi& abi : abis_) {
    std::vector<Change> c = check(m, abi);
    out.insert(out.end(), c.begin(), c.end());
  }
  return out;
}

std::vector<Change> ValidatePass::check(Module& m, const EntryAbi& abi) const {
  const Entry& e = single_entry(m, name(), abi.entry);
  const std::string target = abi.target.empty() ? "" : fmt::format(" ({})", abi.target);
  std::vector<Change> out;

  if (abi.formals) {
    const std::vector<ExpectedFormal>& want = *abi.formals;
    if (want.size() != e.params.size()) {
      std::string message = fmt::format("pass '{}': entry '{}'{}: formals of the kernel ABI: expected {}, found {}\n",
                                        name(), e.name, target, want.size(), e.params.size());
      std::vector<std::string> locations;
      for (size_t i = 0; i < std::max(want.size(), e.params.size()); ++i) {
        if (i >= e.params.size()) {
          message += fmt::format("  missing formal {}: {}\n", i, describe(want[i]));
        } else if (i >= want.size()) {
          message += m.diagnostic(e.params[i].loc, llvm::SourceMgr::DK_Note,
                                  fmt::format("unexpected formal {}: '{}'", i, e.params[i].text.str()));
          locations.push_back(m.location(e.params[i].loc));
        } else if (!matches(e.params[i], want[i])) {
          message += m.diagnostic(e.params[i].loc, llvm::SourceMgr::DK_Note,
                                  fmt::format("formal {}: expected {}", i, describe(want[i])));
          locations.push_back(m.location(e.params[i].loc));
        }
      }
      if (locations.empty()) locations.push_back(m.location(e.loc));
      message += m.diagnostic(e.loc, llvm::SourceMgr::DK_Note, "in this entry");
      throw PassError(std::string(name()), std::move(message), static_cast<long>(want.size()),
                      static_cast<long>(e.params.size()), std::move(locations));
    }
    for (size_t i = 0; i < want.size(); ++i)
      if (!matches(e.params[i], want[i]))
        fail_at(m, name(),
                fmt::format("entry '{}'{}: formal {} is '.param {} {}', the kernel ABI says {}", e.name, target, i,
                            e.params[i].declaration(), e.params[i].name, describe(want[i])),
                e.params[i].loc);
    out.push_back({e.loc, fmt::format("{}: {} formals match the kernel ABI", e.name, want.size())});
  }

  for (const std::string& pattern : abi.required_instructions) {
    std::vector<llvm::SMLoc> sites;
    for (const Statement& s : e.body)
      if (opcode_matches(s.opcode(), pattern)) sites.push_back(s.loc);
    if (sites.empty()) {
      std::string message =
          fmt::format("pass '{}': entry '{}'{} lost a required instruction: '{}' (expected at least 1, found 0)\n",
                      name(), e.name, target, pattern);
      message += m.diagnostic(e.loc, llvm::SourceMgr::DK_Note, "searched this entry");
      throw PassError(std::string(name()), std::move(message), 1, 0, {m.location(e.loc)});
    }
    out.push_back({sites.front(), fmt::format("{}: required '{}' present ({} instruction(s), first at {})", e.name,
                                              pattern, sites.size(), m.location(sites.front()))});
  }
  return out;
}

}  // namespace moejit::ptx
