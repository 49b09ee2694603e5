#include "ptx_passes/pass.hpp"

#include <fmt/format.h>

namespace moejit::ptx {

PassError::PassError(std::string pass, std::string message, long expected, long found,
                     std::vector<std::string> locations)
    : std::runtime_error(std::move(message)),
      pass_(std::move(pass)),
      expected_(expected),
      found_(found),
      locations_(std::move(locations)) {}

void expect_count(const Module& m, std::string_view pass, const std::string& what, std::size_t expected,
                  const std::vector<llvm::SMLoc>& sites, llvm::SMLoc scope) {
  if (sites.size() == expected) return;
  std::string message = fmt::format("pass '{}': {}: expected {}, found {}\n", pass, what, expected, sites.size());
  std::vector<std::string> locations;
  if (sites.empty()) {
    locations.push_back(m.location(scope));
    message += m.diagnostic(scope, llvm::SourceMgr::DK_Note, "searched here");
  }
  for (size_t i = 0; i < sites.size(); ++i) {
    locations.push_back(m.location(sites[i]));
    message += m.diagnostic(sites[i], llvm::SourceMgr::DK_Note, fmt::format("match {} of {}", i + 1, sites.size()));
  }
  throw PassError(std::string(pass), std::move(message), static_cast<long>(expected), static_cast<long>(sites.size()),
                  std::move(locations));
}

void fail_at(const Module& m, std::string_view pass, const std::string& message, llvm::SMLoc loc) {
  std::string text = fmt::format("pass '{}': {}\n", pass, message);
  text += m.diagnostic(loc, llvm::SourceMgr::DK_Note, "here");
  throw PassError(std::string(pass), std::move(text), -1, -1, {m.location(loc)});
}

Entry& single_entry(Module& m, std::string_view pass, const std::string& entry) {
  std::vector<llvm::SMLoc> sites;
  Entry* found = nullptr;
  for (Entry& e : m.entries())
    if (entry.empty() || e.name == entry) sites.push_back(e.loc), found = &e;
  expect_count(m, pass, entry.empty() ? "entries in the module" : fmt::format("entries named '{}'", entry), 1, sites,
               m.start());
  return *found;
}

}  // namespace moejit::ptx
