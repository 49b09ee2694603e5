// The public API as an engine sees it: only <moejit/moejit.hpp>, errors as
// moejit::Error with the field, plan and precompile without a GPU.
#include <doctest/doctest.h>

#include <moejit/moejit.hpp>

#include <algorithm>
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
  CHECK(moejit::builtin_models() == std::vector<std::string>{"glm5.2", "dsv4.1-flash", "gpt-oss-120b", "gpt-oss-20b"});
  const moejit::Config glm = moejit::builtin_config("glm5.2");
  CHECK(glm.hidden > 0);
  CHECK(moejit::config_from_json(moejit::to_json(glm)).hidden == glm.hidden);
  CHECK(field_of([] { moejit::builtin_config("llama"); }) == "model");
  CHECK(field_of([] { moejit::config_from_json("{\"experts\": 8, \"top_k\": 2, \"hidden\": 512}"); }) ==
        "intermediate");
  CHECK(field_of([] { moejit::config_from_json("{\"experts\": 8,"); }) == "config");
  // Text from outside gets a config file's bounds: depth, size, repeated keys.
  CHECK(field_of([] { moejit::config_from_json(std::string(100000, '[') + std::string(100000, ']')); }) == "config");
  CHECK(field_of([] { moejit::config_from_json("{\"experts\": 8, \"experts\": 16}"); }) == "config");
  CHECK(field_of([] { moejit::config_from_json(std::string(2 << 20, ' ') + "{}"); }) == "config");
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
  CHECK(p.path == "fast");
  CHECK(p.compute.launched);
  CHECK(p.compute.grid > 0);
  CHECK(p.workspace_bytes > 0);
  CHECK(moejit::workspace_bytes(moejit::builtin_config("glm5.2")) == p.workspace_bytes);
  CHECK(p.json.find("\"compute\"") != std::string::npos);
  moejit::LayerOptions fast;
  fast.path = "fast";
  CHECK(moejit::plan(moejit::builtin_config("glm5.2"), 8, "h200", fast).path == "fast");
  // PDL between the roles: planned up to B = 4; the option is what the plan reports (and what launches).
  CHECK(moejit::plan(moejit::builtin_config("glm5.2"), 1, "h200").pdl);
  moejit::LayerOptions no_pdl;
  no_pdl.pdl = false;
  const moejit::Plan off = moejit::plan(moejit::builtin_config("glm5.2"), 1, "h200", no_pdl);
  CHECK_FALSE(off.pdl);
  CHECK(off.json.find("\"pdl\": false") != std::string::npos);
  CHECK(std::count_if(off.notes.begin(), off.notes.end(),
                      [](const std::string& n) { return n == "pdl off (set by the options)"; }) == 1);
  moejit::LayerOptions pdl_on;
  pdl_on.pdl = true;
  CHECK(moejit::plan(moejit::builtin_config("glm5.2"), 8, "h200", pdl_on).pdl);
  CHECK(field_of([] { moejit::plan(moejit::builtin_config("glm5.2"), 8, "a100"); }) == "device");
  CHECK(field_of([] { moejit::plan(moejit::builtin_config("glm5.2"), 0); }) == "batch");
  CHECK(field_of([] { moejit::plan(moejit::builtin_config("glm5.2"), 257); }) == "batch");
  moejit::LayerOptions turbo;
  turbo.path = "turbo";
  CHECK(field_of([&] { moejit::plan(moejit::builtin_config("glm5.2"), 8, "h200", turbo); }) == "path");
}

// (Builds or finds: the unit ctest's cache persists between runs. A cold precompile's compiles are
// cli_precompile_cold's, on a cache its fixture empties.)
TEST_CASE("public API: precompile builds or finds every kernel a layer needs, with progress; then finds them cached") {
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
  const moejit::PrecompileReport again = moejit::precompile(small_config(), {2, 1, 2, 1}, {"sm_90a"});
  CHECK(again.ok());
  CHECK(again.kernels == first.kernels);
  CHECK(again.cached == again.kernels);

  CHECK(field_of([] { moejit::precompile(small_config(), {}, {"sm_90a"}); }) == "batches");
  CHECK(field_of([] { moejit::precompile(small_config(), {300}, {"sm_90a"}); }) == "batch");
  CHECK(field_of([] { moejit::precompile(small_config(), {1}, {"sm_75"}); }) == "targets");
  CHECK(field_of([] { moejit::precompile(small_config(), {1}, {"sm_100a"}); }) == "targets");
}

TEST_CASE("public API: pack_weights packs a checkpoint on the host, sized and checked") {
  const moejit::Config c = small_config();
  const int e = c.experts, h = c.hidden, i = c.intermediate;
  std::vector<std::uint8_t> w1(std::size_t(e) * 2 * i * h / 2), s1(std::size_t(e) * 2 * i * h / 32),
      w2(std::size_t(e) * h * i / 2), s2(std::size_t(e) * h * i / 32);
  std::uint32_t state = 12345;
  auto next = [&] { return static_cast<std::uint8_t>((state = state * 1664525u + 1013904223u) >> 24); };
  for (auto* v : {&w1, &w2}) std::generate(v->begin(), v->end(), next);
  for (auto* v : {&s1, &s2}) std::generate(v->begin(), v->end(), [&] { return std::uint8_t(118 + next() % 5); });
  s2[7] = 127;
  moejit::CheckpointWeightsHost host{w1.data(), s1.data(), w2.data(), s2.data(),
                                     w1.size(), s1.size(), w2.size(), s2.size()};
  moejit::LayerOptions exact_path;
  exact_path.path = "exact";
  const moejit::PackedWeights exact = moejit::pack_weights(c, host, exact_path);
  CHECK(exact.w1.size() == w1.size() + s1.size());  // the payload and its scale words, rearranged
  CHECK(exact.w2.size() == w2.size() + s2.size());
  CHECK(exact.top_scale_code == 127);
  CHECK(exact.atom == moejit::plan(c, 1, "h200", exact_path).atom);
  moejit::LayerOptions fast;  // the default path
  const moejit::PackedWeights f = moejit::pack_weights(c, host);
  CHECK(f.atom == moejit::plan(c, 1).atom);
  CHECK(f.atom != exact.atom);
  CHECK(f.w1 != exact.w1);  // each atom has its own fragment order
  // Every nibble and scale byte lands somewhere: the byte histograms of the scales agree.
  std::multiset<std::uint8_t> in(s2.begin(), s2.end()), out;
  for (std::size_t step = 0; step < exact.w2.size(); step += 4352)
    out.insert(exact.w2.begin() + step + 4096, exact.w2.begin() + step + 4352);
  CHECK(in == out);
  // A block of scale code 0 is flagged only when one of its 32 codes has a magnitude (-0 is 0x8).
  CHECK_FALSE(f.subnormal_weight_scales);
  const int block = 5;  // w1's row 0, K32 block 5: payload bytes [80, 96)
  s1[block] = 0;
  std::fill(w1.begin() + 16 * block, w1.begin() + 16 * block + 16, std::uint8_t(0x88));
  CHECK_FALSE(moejit::pack_weights(c, host).subnormal_weight_scales);
  w1[16 * block + 15] = 0x18;  // its last code: 0.5
  CHECK(moejit::pack_weights(c, host).subnormal_weight_scales);
  w1[16 * block + 15] = 0x88;
  w1[16 * block + 16] = 0x11;  // the next block's first byte: not this block's
  CHECK_FALSE(moejit::pack_weights(c, host).subnormal_weight_scales);
  s1[block] = 120;

  moejit::CheckpointWeightsHost short_s1 = host;
  short_s1.s1_bytes -= 1;
  CHECK(field_of([&] { moejit::pack_weights(c, short_s1); }) == "s1");
  moejit::CheckpointWeightsHost no_w2 = host;
  no_w2.w2 = nullptr;
  CHECK(field_of([&] { moejit::pack_weights(c, no_w2); }) == "w2");
  s1[3] = 200;  // beyond the exact atom's codes, within the fast one's
  CHECK(field_of([&] { moejit::pack_weights(c, host, exact_path); }) == "weight scales");
  CHECK(moejit::pack_weights(c, host, fast).top_scale_code == 200);
  s1[3] = 255;  // NaN in UE8M0: no path takes it
  CHECK(field_of([&] { moejit::pack_weights(c, host, fast); }) == "weight scales");
  s1[3] = 120;
  CHECK(field_of([&] { moejit::pack_weights(c, host, {}, "sm_75"); }) == "target");

  // Uploaded, the packed weights keep what the packer found (left at its default, subnormal_weight_scales is
  // true and the layer plans no token frame).
  for (const bool subnormal : {false, true}) {
    moejit::PackedWeights p = moejit::pack_weights(c, host);
    p.subnormal_weight_scales = subnormal;
    const moejit::PackedWeightsDevice d = moejit::packed_on_device(p, 0x1000, 0x2000);
    CHECK(d.subnormal_weight_scales == subnormal);
    CHECK(d.top_scale_code == p.top_scale_code);
    CHECK(d.atom == p.atom);
    CHECK((d.w1 == 0x1000 && d.w2 == 0x2000 && d.b1 == 0 && d.b2 == 0));
  }
}

TEST_CASE("public API: configure() is refused once the kernel cache is in use") {
  (void)moejit::precompile(small_config(), {1}, {"sm_90a"});  // the cache is in use now (or already was)
  CHECK(field_of([] { moejit::configure({}); }) == "settings");
}

TEST_CASE("public API: a Layer without a GPU fails with a moejit::Error, not a crash") {
  // Without a CUDA driver (CI), or with one but no current context, the
  // constructor throws before it allocates anything.
  CHECK_THROWS_AS(moejit::Layer(small_config(), moejit::CheckpointWeights{}), moejit::Error);
}

}  // namespace
