// The public API as an engine sees it: only <moejit/moejit.hpp>, errors as
// moejit::Error with the field, plan and precompile without a GPU.
#include <doctest/doctest.h>

#include <moejit/moejit.hpp>

#include <mutex>
#include <set>

namespace {

std::string field_of(const std::function<void()>& f) {
  try {
    f();
  } catch (const moejit::Error& e) {
    return e.field();
  }
  return "(accepted)";
}

moejit::Config small_config() {
  moejit::Config c;
  c.name = "api-small";
  c.experts = 8;
  c.top_k = 2;
  c.hidden = 512;
  c.intermediate = 256;
  return c;
}

TEST_CASE("public API: configs, and each refusal names its field") {
  CHECK(moejit::builtin_models() == std::vector<std::string>{"glm5.2", "dsv4.1-flash"});
  const moejit::Config glm = moejit::builtin_config("glm5.2");
  CHECK(glm.hidden > 0);
  CHECK(moejit::config_from_json(moejit::to_json(glm)).hidden == glm.hidden);
  CHECK(field_of([] { moejit::builtin_config("llama"); }) == "model");
  CHECK(field_of([] { moejit::config_from_json("{\"experts\": 8, \"top_k\": 2, \"hidden\": 512}"); }) ==
        "intermediate");
  CHECK(field_of([] { moejit::config_from_json("{\"experts\": 8,"); }) == "config");
  CHECK(field_of([] { moejit::config_from_file("/nonexistent/moejit.json"); }) == "");
  moejit::Config bad = small_config();
  bad.top_k = 9;
  CHECK(field_of([&] { moejit::validate(bad); }) == "top_k");
  bad = small_config();
  bad.recipe = "w8a8";
  CHECK(field_of([&] { moejit::validate(bad); }) == "recipe");
}

TEST_CASE("public API: plan on a built-in device, no GPU") {
  const moejit::Plan p = moejit::plan(moejit::builtin_config("glm5.2"), 8, "h200");
  CHECK(p.batch == 8);
  CHECK(p.target == "sm_90a");
  CHECK(p.path == "exact");
  CHECK(p.compute.launched);
  CHECK(p.compute.grid > 0);
  CHECK(p.workspace_bytes > 0);
  CHECK(moejit::workspace_bytes(moejit::builtin_config("glm5.2")) == p.workspace_bytes);
  CHECK(p.json.find("\"compute\"") != std::string::npos);
  moejit::LayerOptions fast;
  fast.path = "fast";
  CHECK(moejit::plan(moejit::builtin_config("glm5.2"), 8, "h200", fast).path == "fast");
  CHECK(field_of([] { moejit::plan(moejit::builtin_config("glm5.2"), 8, "a100"); }) == "device");
  CHECK(field_of([] { moejit::plan(moejit::builtin_config("glm5.2"), 0); }) == "batch");
  CHECK(field_of([] { moejit::plan(moejit::builtin_config("glm5.2"), 257); }) == "batch");
  moejit::LayerOptions turbo;
  turbo.path = "turbo";
  CHECK(field_of([&] { moejit::plan(moejit::builtin_config("glm5.2"), 8, "h200", turbo); }) == "path");
}

TEST_CASE("public API: precompile builds every kernel a layer needs, with progress; then finds them cached") {
  std::mutex mu;
  std::set<std::string> seen;
  int calls = 0, last_total = 0;
  const moejit::PrecompileProgress progress = [&](int done, int total, std::string_view kernel) {
    std::lock_guard lock(mu);
    ++calls;
    last_total = total;
    CHECK(done <= total);
    seen.insert(std::string(kernel));
  };
  const moejit::PrecompileReport first = moejit::precompile(small_config(), {1, 2}, {"sm_90a"}, {}, 2, progress);
  INFO((first.errors.empty() ? std::string() : first.errors.front()));
  CHECK(first.ok());
  CHECK(first.kernels >= 2);  // at least compute and finalize
  CHECK(first.compiled + first.cached == first.kernels);
  CHECK(calls == first.kernels);
  CHECK(last_total == first.kernels);
  CHECK(static_cast<int>(seen.size()) == first.kernels);
  const moejit::PrecompileReport again = moejit::precompile(small_config(), {1, 2}, {"sm_90a"});
  CHECK(again.ok());
  CHECK(again.kernels == first.kernels);
  CHECK(again.cached == again.kernels);

  CHECK(field_of([] { moejit::precompile(small_config(), {}, {"sm_90a"}); }) == "batches");
  CHECK(field_of([] { moejit::precompile(small_config(), {300}, {"sm_90a"}); }) == "batch");
  CHECK(field_of([] { moejit::precompile(small_config(), {1}, {"sm_75"}); }) == "targets");
  CHECK(field_of([] { moejit::precompile(small_config(), {1}, {"sm_100a"}); }) == "targets");
}

TEST_CASE("public API: configure() is refused once the kernel cache is in use") {
  (void)moejit::precompile(small_config(), {1}, {"sm_90a"});  // the cache is in use now (or already was)
  CHECK(field_of([] { moejit::configure({}); }) == "settings");
}

TEST_CASE("public API: a Layer without a GPU fails with a moejit::Error, not a crash") {
  // Without a CUDA driver (CI), or with one but no current context, the
  // constructor throws before it allocates anything.
  CHECK_THROWS_AS(moejit::Layer(small_config(), {}), moejit::Error);
}

}  // namespace
