// The production runtime on the GPU, what layers share: two layers on SM
// partitions at once, one caller workspace under 8 layers, weights packed on
// the host, and the TensorMap cache. Threads sharing a layer are in
// test_runtime_threads_gpu.cpp.
#include <doctest/doctest.h>
#include <fmt/format.h>

#include <memory>
#include <string>
#include <vector>

#include "gpu_test_util.hpp"
#include "oracle/moe_check.hpp"
#include "runtime/sm_partitions.hpp"
#include "runtime/tensor_map_cache.hpp"
#include "runtime/weight_packing.hpp"

using namespace moejit;
using gpu_test::bad_elements;
using gpu_test::cosine_vs_reference;
using gpu_test::DeviceInputs;
using gpu_test::download_sync;
using runtime::DeviceBuffer;

TEST_CASE("two layers planned for 64-SM partitions (MoeLayerOptions::sm_count) run at once in two green contexts") {
  // Expert parallelism's ranks on one GPU: each rank's layer is built with its partition's context current,
  // plans its persistent grid for the partition's SMs and runs on the partition's stream. Both partitions run
  // the same forward at the same time: the same bytes from each, and they pass the reference checks.
  runtime::ScopedContext ctx(0);
  const codegen::MoeConfig config = codegen::builtin_model("glm5.2");
  const reference::MoeProblem p = oracle::problem_of(config);
  const oracle::RandomWeights w = oracle::random_weights(p, gpu_test::seed() ^ 0x9A27ull);
  runtime::SmPartitions parts(0, 2);
  runtime::MoeLayerOptions o;
  o.sm_count = parts.shape().sms_per_part;
  MESSAGE("2 partitions of " << o.sm_count << " SMs");
  {
    std::vector<std::unique_ptr<runtime::MoeLayer>> layers;
    for (int i = 0; i < 2; ++i) {
      MOEJIT_CU(cuCtxSetCurrent, parts.context(i));
      layers.push_back(std::make_unique<runtime::MoeLayer>(config, w.device(), o));
    }
    std::uint64_t case_seed = gpu_test::seed() ^ 0x9A27ull;
    for (const int b : {1, 8, 64}) {
      INFO("B=", b);
      const codegen::MoeLaunchPlan plan = layers[0]->plan(b);
      CHECK(plan.compute.grid == o.sm_count * plan.compute.blocks_per_sm);
      const oracle::RandomInputs in = oracle::random_inputs(p, b, oracle::RoutingKind::zipf, ++case_seed);
      std::vector<std::unique_ptr<DeviceInputs>> dev;
      for (int i = 0; i < 2; ++i) {
        MOEJIT_CU(cuCtxSetCurrent, parts.context(i));
        dev.push_back(std::make_unique<DeviceInputs>(p, b));
        dev[i]->upload(in, parts.stream(i));
        MOEJIT_CU(cuMemsetD8Async, dev[i]->y.ptr(), 0xFF, dev[i]->y.bytes(), parts.stream(i));  // poison
      }
      for (int i = 0; i < 2; ++i) {
        MOEJIT_CU(cuCtxSetCurrent, parts.context(i));
        layers[i]->forward(dev[i]->args(b), parts.stream(i));
      }
      const std::vector<std::uint16_t> y0 = download_sync(dev[0]->y, parts.stream(0));
      CHECK(download_sync(dev[1]->y, parts.stream(1)) == y0);
      MOEJIT_CU(cuCtxSetCurrent, parts.context(0));
      const oracle::MoeCheckResult r = oracle::check_forward(*layers[0], w, b, oracle::RoutingKind::zipf, case_seed);
      CHECK_MESSAGE(r.passed(), r.summary());
    }
    for (int i = 0; i < 2; ++i) {
      MOEJIT_CU(cuCtxSetCurrent, parts.context(i));
      layers[i]->release_stream(parts.stream(i));
      layers[i].reset();
    }
  }
  MOEJIT_CU(cuCtxSetCurrent, ctx.get());
}

TEST_CASE("8 layers sharing one caller workspace on one stream give the bytes of 8 layers with their own") {
  // Engine-owned memory (issue 13): one workspace, zeroed once, serves every
  // layer of a decode step in turn, because each forward leaves it ready for
  // the next (epoch tags, counters reset by the last CTA or, on the unit schedule, the finalize grid).
  runtime::ScopedContext ctx(0);
  const std::uint64_t seed = gpu_test::seed() ^ 0x5A5Eull;
  const codegen::MoeConfig config = gpu_test::small_config("shared-ws", 16, 4, 1024, 768);
  const reference::MoeProblem p = oracle::problem_of(config);
  constexpr int kLayers = 8;
  const int B = 16;
  std::vector<oracle::RandomWeights> weights;
  std::vector<std::unique_ptr<runtime::MoeLayer>> layers;
  std::vector<oracle::RandomInputs> host;
  std::vector<std::unique_ptr<DeviceInputs>> dev;
  CUstream s = nullptr;
  MOEJIT_CU(cuStreamCreate, &s, CU_STREAM_NON_BLOCKING);
  for (int i = 0; i < kLayers; ++i) {
    weights.push_back(oracle::random_weights(p, seed + i));
    layers.push_back(std::make_unique<runtime::MoeLayer>(config, weights.back().device()));
    host.push_back(oracle::random_inputs(p, B, oracle::k_all_routings[i % 4], seed + 100 + i));
    dev.push_back(std::make_unique<DeviceInputs>(p, B));
    dev.back()->upload(host.back(), s);
    CHECK(layers[i]->workspace_bytes() == layers[0]->workspace_bytes());
  }
  const std::size_t bytes = static_cast<std::size_t>(layers[0]->workspace_bytes());
  DeviceBuffer shared(bytes);
  MOEJIT_CU(cuMemsetD8Async, shared.ptr(), 0, bytes, s);

  std::vector<std::vector<std::uint16_t>> own(kLayers);
  for (int i = 0; i < kLayers; ++i) {
    MOEJIT_CU(cuMemsetD8Async, dev[i]->y.ptr(), 0xFF, dev[i]->y.bytes(), s);
    layers[i]->forward(dev[i]->args(B), s);
    own[i] = download_sync(dev[i]->y, s);
    CHECK(bad_elements(own[i]) == 0);
    const double cosine = cosine_vs_reference(weights[i], p, host[i], own[i]);
    CHECK_MESSAGE(cosine >= 0.99999, "layer " << i << " cosine " << cosine);
  }
  int differ = 0;
  for (int round = 0; round < 3; ++round)  // three forwards of each layer on the one workspace
    for (int i = 0; i < kLayers; ++i) {
      MOEJIT_CU(cuMemsetD8Async, dev[i]->y.ptr(), 0xFF, dev[i]->y.bytes(), s);
      runtime::MoeForwardArgs a = dev[i]->args(B);
      a.workspace = shared.ptr();
      layers[i]->forward(a, s);
      differ += download_sync(dev[i]->y, s) != own[i];
    }
  CHECK(differ == 0);
  for (const auto& layer : layers) CHECK(layer->workspace(s) != 0);  // each made its own in the first pass only

  // A workspace that is not device memory, or too small from its pointer, is refused by name before any launch.
  runtime::MoeForwardArgs a = dev[0]->args(B);
  a.workspace = 0x100000;  // aligned, but nothing the driver allocated
  CHECK_THROWS_WITH_AS(layers[0]->forward(a, s), doctest::Contains("workspace = 0x100000 is invalid"),
                       runtime::InvalidInput);
  // An allocation of whole 2 MiB pages (no rounding to hide the shortfall), entered near its end.
  const std::size_t page = std::size_t(2) << 20;
  DeviceBuffer big((4 * bytes + page - 1) / page * page);
  const std::size_t tail = (bytes / 2 + 255) / 256 * 256;
  a.workspace = big.ptr() + big.bytes() - tail;
  const std::string shortfall = fmt::format("holds {} B from this pointer; the layer needs {} B", tail, bytes);
  CHECK_THROWS_WITH_AS(layers[0]->forward(a, s), doctest::Contains(shortfall.c_str()), runtime::InvalidInput);
  for (const auto& layer : layers) layer->release_stream(s);
  runtime::driver().cuStreamDestroy(s);
}

TEST_CASE("a layer over weights packed on the host gives the bytes of a layer that packed them itself") {
  // Offline packing (issue 13): the GPU holds the packed copy alone.
  runtime::ScopedContext ctx(0);
  const std::uint64_t seed = gpu_test::seed() ^ 0x9ACCull;
  const codegen::MoeConfig config = gpu_test::small_config("packed", 24, 4, 1024, 768);
  const reference::MoeProblem p = oracle::problem_of(config);
  const oracle::RandomWeights w = oracle::random_weights(p, seed);
  // The driver's free device memory once the GPU is idle.
  auto free_memory = [] {
    std::size_t free = 0, total = 0;
    MOEJIT_CU(cuCtxSynchronize);
    MOEJIT_CU(cuMemGetInfo, &free, &total);
    return std::int64_t(free);
  };
  for (const codegen::ComputePath path : {codegen::ComputePath::exact, codegen::ComputePath::fast}) {
    runtime::MoeLayerOptions options;
    options.codegen.path = path;
    // From the checkpoint: the layer's own allocations peak at its packed copy and a status word
    // (no second copy while packing); the driver's view (modules, stream) stays within 32 MiB more.
    const std::size_t checkpoint = w.w1.bytes() + w.s1.bytes() + w.w2.bytes() + w.s2.bytes();
    const std::int64_t free0 = free_memory();
    runtime::reset_device_memory_peak();
    const runtime::DeviceMemoryStats before = runtime::device_memory_stats();
    runtime::MoeLayer own(config, w.device(), options);
    const std::size_t peak = runtime::device_memory_stats().peak - before.live;
    const std::int64_t free1 = free_memory();
    MESSAGE(codegen::path_name(path), ": constructing from a ", checkpoint,
            " B checkpoint: moejit's allocations peaked at ", peak, " B; the driver's free memory fell by ",
            free0 - free1, " B");
    CHECK(peak >= w.w1.bytes() + w.w2.bytes());  // the packed copy was counted
    CHECK(peak <= checkpoint + 4096);
    CHECK(free0 - free1 <= std::int64_t(checkpoint + (std::size_t(32) << 20)));
    const runtime::PackedWeightsHost host =
        runtime::pack_weights(config, own.atom(),
                              {w.host.w1.data(), w.host.s1.data(), w.host.w2.data(), w.host.s2.data(), w.host.w1.size(),
                               w.host.s1.size(), w.host.w2.size(), w.host.s2.size()});
    DeviceBuffer w1(host.w1.size()), w2(host.w2.size());
    w1.upload(host.w1.data(), host.w1.size());
    w2.upload(host.w2.data(), host.w2.size());
    const std::int64_t free_before = free_memory();
    // What the packer found in the scales travels with the weights: left out, subnormal_weight_scales reads as
    // true (exact for any weights), which plans no token frame, and y differed on some seeds (s73, s74).
    runtime::MoeLayer packed(config, runtime::packed_on_device(host, w1.ptr(), w2.ptr()), options);
    // What construction adds beside the packed weights: no copy of them, only modules and a stream.
    const std::int64_t grown = free_before - free_memory();
    MESSAGE(codegen::path_name(path), ": constructing over ", host.w1.size() + host.w2.size(),
            " B of packed weights took ", grown, " B of device memory");
    CHECK(grown < std::int64_t(host.w1.size() + host.w2.size()));
    CHECK(grown <= (std::int64_t(32) << 20));
    CHECK(packed.packed_weights().w1 == w1.ptr());  // read in place, not copied
    CUstream s = nullptr;
    MOEJIT_CU(cuStreamCreate, &s, CU_STREAM_NON_BLOCKING);
    for (const int b : {1, 16, 64}) {
      const oracle::RandomInputs in = oracle::random_inputs(p, b, oracle::RoutingKind::uniform, seed + b);
      DeviceInputs dev(p, b);
      dev.upload(in, s);
      MOEJIT_CU(cuMemsetD8Async, dev.y.ptr(), 0xFF, dev.y.bytes(), s);
      own.forward(dev.args(b), s);
      const std::vector<std::uint16_t> want = download_sync(dev.y, s);
      MOEJIT_CU(cuMemsetD8Async, dev.y.ptr(), 0xFF, dev.y.bytes(), s);
      packed.forward(dev.args(b), s);
      const std::vector<std::uint16_t> got = download_sync(dev.y, s);
      INFO(codegen::path_name(path), " B=", b);
      // The same plan, the token frame included, or the bytes need not agree.
      CHECK(packed.plan(b).token_frame == own.plan(b).token_frame);
      CHECK(packed.options().codegen.subnormal_weight_scales == own.options().codegen.subnormal_weight_scales);
      if (got != want) {  // which layer is off, and how
        MESSAGE(gpu_test::describe_difference(want, got, p.hidden));
        MESSAGE("cosine against the reference: own ", gpu_test::cosine_vs_reference(w, p, in, want), ", packed ",
                gpu_test::cosine_vs_reference(w, p, in, got));
      }
      CHECK(got == want);
      CHECK(bad_elements(want) == 0);
    }
    // Packed for the other atom, or with a code the atom refuses: refused by name.
    const codegen::ComputePath other =
        path == codegen::ComputePath::exact ? codegen::ComputePath::fast : codegen::ComputePath::exact;
    runtime::MoeLayerOptions other_options;
    other_options.codegen.path = other;
    CHECK_THROWS_WITH_AS(
        runtime::MoeLayer(config, runtime::PackedWeightsDevice{w1.ptr(), w2.ptr(), 120, host.atom}, other_options),
        doctest::Contains("packed.atom"), runtime::InvalidInput);
    CHECK_THROWS_WITH_AS(
        runtime::MoeLayer(config, runtime::PackedWeightsDevice{w1.ptr(), w2.ptr(), 255, host.atom}, options),
        doctest::Contains("packed.top_scale_code = 255"), runtime::InvalidInput);
    own.release_stream(s);
    packed.release_stream(s);
    runtime::driver().cuStreamDestroy(s);
  }
}

TEST_CASE("TensorMap cache: same address and shape hit; a new address is a new descriptor") {
  runtime::ScopedContext ctx(0);
  runtime::TensorMapCache& cache = runtime::TensorMapCache::global();
  const std::uint64_t rows = 4096;  // 4096 rows x 64 B
  auto a = std::make_unique<DeviceBuffer>(rows * 64);
  const CUdeviceptr a_ptr = a->ptr();
  const std::uint64_t h0 = cache.hits(), m0 = cache.misses();
  const runtime::TensorMapBlob first = cache.weight_tile_map(a_ptr, rows, 68);
  CHECK(cache.misses() == m0 + 1);
  CHECK(cache.weight_tile_map(a_ptr, rows, 68) == first);
  CHECK(cache.hits() == h0 + 1);
  CHECK(cache.weight_tile_map(a_ptr, rows / 2, 68) != first);  // same pointer, other shape: its own entry
  CHECK(cache.misses() == m0 + 2);

  // Free and reallocate while holding the old block's neighbour: a new address.
  DeviceBuffer hold(rows * 64);
  a.reset();
  DeviceBuffer b(rows * 64 * 2);
  REQUIRE(b.ptr() != a_ptr);
  const runtime::TensorMapBlob second = cache.weight_tile_map(b.ptr(), rows, 68);
  CHECK(cache.misses() == m0 + 3);
  CHECK(second != first);
  CHECK(second == runtime::encode_weight_tile_map(b.ptr(), rows, 68));  // never stale
  CHECK(cache.weight_tile_map(b.ptr(), rows, 68) == second);
  CHECK(cache.hits() == h0 + 2);
}
