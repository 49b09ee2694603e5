#pragma once
// The pass manager: an ordered list of named passes, run over one module. It
// keeps the module's text after every pass, so `moejit inspect` and the
// cache can show what each pass did as a diff.

#include <memory>
#include <string>
#include <vector>

#include "ptx_passes/pass.hpp"

namespace moejit::ptx {

struct PassStage {
  std::string pass;
  bool skipped = false;              // the precondition did not hold: the module is untouched
  std::string skip_reason;           // why, when skipped
  std::vector<std::string> summary;  // "file:line:col: what" for every change (or check) the pass made
  std::string ptx;                   // the module after the pass
  double millis = 0;

  bool changed_from(const std::string& before) const { return ptx != before; }
};

class PassManager {
 public:
  void add(std::unique_ptr<Pass> pass);
  std::vector<std::string> names() const;
  // Runs every pass in order, appending each finished stage to `stages`, so
  // a caller that catches the PassError of a failing pass still has the
  // stages before it.
  void run(Module& m, std::vector<PassStage>& stages) const;

 private:
  std::vector<std::unique_ptr<Pass>> passes_;
};

}  // namespace moejit::ptx
