#include "ptx_passes/pass_version.hpp"

#include <fmt/format.h>

namespace moejit::ptx {
namespace {
// ".version 9.0" -> "9.0" (the parser has checked the shape).
llvm::StringRef version_operand(llvm::StringRef directive) {
  return directive.drop_front(8).ltrim(" \t");
}
}  // namespace

Precondition VersionPass::precondition(const Module& m) const {
  if (!policy_.cap) return Precondition::no("no version policy");
  if (!policy_.only_for_release.empty()) {
    const std::string release = m.toolchain_release();
    if (release != policy_.only_for_release)
      return Precondition::no(fmt::format("the policy caps PTX from toolchain release {} at {}; this module is from {}",
                                          policy_.only_for_release, policy_.cap->str(),
                                          release.empty() ? "an unknown toolchain" : "release " + release));
  }
  // A module without exactly one .version is run() to fail loudly, not skipped.
  const std::vector<const Decl*> versions = m.find_decls(DeclKind::version);
  if (versions.size() == 1) {
    const auto v = PtxVersion::parse(version_operand(versions[0]->text));
    if (v && *v <= *policy_.cap)
      return Precondition::no(fmt::format("PTX {} is within the cap {}", v->str(), policy_.cap->str()));
  }
  return Precondition::yes();
}

std::vector<Change> VersionPass::run(Module& m) const {
  std::vector<llvm::SMLoc> sites;
  Decl* decl = nullptr;
  for (Decl& d : m.decls())
    if (d.kind == DeclKind::version) sites.push_back(d.loc), decl = &d;
  expect_count(m, name(), "'.version' directives in the module", 1, sites, m.start());

  const llvm::StringRef operand = version_operand(decl->text);
  const auto from = PtxVersion::parse(operand);
  if (!from) fail_at(m, name(), fmt::format("cannot read '.version {}'", operand.str()), decl->loc);
  if (*from <= *policy_.cap) return {};
  // Keep the directive's own spacing; only the number changes.
  const llvm::StringRef prefix = decl->text.take_front(static_cast<size_t>(operand.begin() - decl->text.begin()));
  decl->text = m.save(prefix.str() + policy_.cap->str());
  decl->written = true;
  return {{decl->loc, fmt::format(".version {} -> {}", from->str(), policy_.cap->str())}};
}

}  // namespace moejit::ptx
