// What an engine does with the installed package before it has a GPU: read
// a config, plan a shape, and get a refused input back as moejit::Error
// (its type crosses the shared library's boundary).
#include <moejit/moejit.hpp>

#include <cstdio>

int main() {
  std::printf("moejit %s\n", moejit::version());
  const moejit::Config config = moejit::builtin_config("glm5.2");
  const moejit::Plan plan = moejit::plan(config, 8, "h200");
  std::printf("plan %s B=%d on %s (%s): path %s, compute %d CTAs x %d threads, %d B SMEM, finalize %d CTAs\n",
              plan.model.c_str(), plan.batch, plan.device.c_str(), plan.target.c_str(), plan.path.c_str(),
              plan.compute.grid, plan.compute.threads, plan.compute.smem_bytes, plan.finalize.grid);
  moejit::Config bad = config;
  bad.hidden = 520;
  try {
    moejit::validate(bad);
    std::printf("hidden = 520 was accepted\n");
    return 1;
  } catch (const moejit::Error& e) {
    std::printf("refused: field %s: %s\n", e.field().c_str(), e.what());
  }
  return 0;
}
