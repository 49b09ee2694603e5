#include "ptx_passes/pass_manager.hpp"

#include <chrono>

namespace moejit::ptx {

void PassManager::add(std::unique_ptr<Pass> pass) {
  passes_.push_back(std::move(pass));
}

std::vector<std::string> PassManager::names() const {
  std::vector<std::string> out;
  for (const auto& p : passes_) out.emplace_back(p->name());
  return out;
}

void PassManager::run(Module& m, std::vector<PassStage>& stages) const {
  for (const auto& pass : passes_) {
    const auto start = std::chrono::steady_clock::now();
    PassStage stage;
    stage.pass = std::string(pass->name());
    const Precondition pre = pass->precondition(m);
    if (!pre.holds) {
      stage.skipped = true;
      stage.skip_reason = pre.reason;
    } else {
      for (const Change& c : pass->run(m)) stage.summary.push_back(m.location(c.loc) + ": " + c.what);
    }
    stage.ptx = m.print();
    stage.millis = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count();
    stages.push_back(std::move(stage));
  }
}

}  // namespace moejit::ptx
