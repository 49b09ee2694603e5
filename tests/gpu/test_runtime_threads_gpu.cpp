// The production runtime on the GPU under threads: 8 threads of mixed batch
// sizes compile each kernel once, and a batch size's first forward compiles
// without holding the layer's lock, so other threads' warm forwards go on.
#include <doctest/doctest.h>
#include <fmt/format.h>

#include <atomic>
#include <chrono>
#include <memory>
#include <random>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include "gpu_test_util.hpp"
#include "jit/kernel_cache.hpp"
#include "oracle/moe_check.hpp"

using namespace moejit;
using gpu_test::bad_elements;
using gpu_test::cosine_vs_reference;
using gpu_test::DeviceInputs;
using gpu_test::download_sync;
using runtime::DeviceBuffer;

TEST_CASE("8 threads x mixed batch sizes x 50 forwards: all correct, each kernel compiled once") {
  runtime::ScopedContext ctx(0);
  const std::uint64_t seed = gpu_test::seed() ^ 0xBEEFull;
  // Its shape is its own (no other GPU test builds these kernels), so every
  // distinct kernel is a compile or a disk hit here, never an earlier test's memory hit.
  const codegen::MoeConfig config = gpu_test::small_config("threads", 64, 6, 2048, 1024);
  const reference::MoeProblem p = oracle::problem_of(config);
  const oracle::RandomWeights w = oracle::random_weights(p, seed);
  runtime::MoeLayer layer(config, w.device());
  const std::vector<int> batches = {1, 3, 8, 16, 33, 64};
  std::vector<oracle::RandomInputs> host;
  std::vector<std::unique_ptr<DeviceInputs>> dev;  // read-only for the threads (each has its own y)
  for (std::size_t i = 0; i < batches.size(); ++i) {
    host.push_back(oracle::random_inputs(p, batches[i], oracle::RoutingKind::uniform, seed + 10 + i));
    dev.push_back(std::make_unique<DeviceInputs>(p, batches[i]));
    dev.back()->upload(host.back(), nullptr);
  }
  MOEJIT_CU(cuCtxSynchronize);

  const cache::CounterSnapshot before = jit::KernelCache::global().counters();
  constexpr int kThreads = 8, kCalls = 50;
  struct Result {
    int batch_index;
    std::vector<std::uint16_t> y;
  };
  std::vector<std::vector<Result>> results(kThreads);
  std::vector<std::string> errors(kThreads);
  std::vector<std::thread> pool;
  for (int t = 0; t < kThreads; ++t)
    pool.emplace_back([&, t] {
      try {
        runtime::ScopedContext thread_ctx(0);
        CUstream s = nullptr;
        MOEJIT_CU(cuStreamCreate, &s, CU_STREAM_NON_BLOCKING);
        std::vector<DeviceBuffer> ys;
        for (int b : batches) ys.emplace_back(std::size_t(b) * p.hidden * 2);
        for (int call = 0; call < kCalls; ++call) {
          const int bi = (t + call * 5) % static_cast<int>(batches.size());
          runtime::MoeForwardArgs a = dev[bi]->args(batches[bi]);
          a.y = ys[bi].ptr();
          MOEJIT_CU(cuMemsetD8Async, a.y, 0xFF, ys[bi].bytes(), s);
          layer.forward(a, s);
          results[t].push_back({bi, download_sync(ys[bi], s)});
        }
        layer.release_stream(s);
        runtime::driver().cuStreamDestroy(s);
      } catch (const std::exception& e) {
        errors[t] = e.what();
      }
    });
  for (auto& th : pool) th.join();
  for (int t = 0; t < kThreads; ++t) CHECK_MESSAGE(errors[t].empty(), "thread " << t << ": " << errors[t]);
  const cache::CounterSnapshot delta = jit::KernelCache::global().counters() - before;

  // Golden: one serial forward per batch size, checked against the CPU reference.
  CUstream s = nullptr;
  MOEJIT_CU(cuStreamCreate, &s, CU_STREAM_NON_BLOCKING);
  std::vector<std::vector<std::uint16_t>> golden;
  for (std::size_t i = 0; i < batches.size(); ++i) {
    MOEJIT_CU(cuMemsetD8Async, dev[i]->y.ptr(), 0xFF, dev[i]->y.bytes(), s);
    layer.forward(dev[i]->args(batches[i]), s);
    golden.push_back(download_sync(dev[i]->y, s));
    const double cosine = cosine_vs_reference(w, p, host[i], golden.back());
    CHECK_MESSAGE(cosine >= 0.99999, "B=" << batches[i] << " cosine " << cosine);
    CHECK(bad_elements(golden.back()) == 0);
  }
  layer.release_stream(s);
  runtime::driver().cuStreamDestroy(s);
  int wrong = 0, total = 0;
  for (const auto& per_thread : results)
    for (const Result& r : per_thread) {
      wrong += r.y != golden[r.batch_index];
      ++total;
    }
  // Distinct kernels: the role kernels of each distinct plan (the fast path launches no dispatch role).
  // The layer loads one set of role kernels per role_kernels_key.
  std::set<std::string> role_keys, kernels;
  for (int b : batches) {
    const std::vector<codegen::KernelSpec> specs = codegen::moe_role_specs(layer.config(), layer.plan(b));
    role_keys.insert(codegen::role_kernels_key(specs));
    for (const codegen::KernelSpec& spec : specs) kernels.insert(spec.summary());
  }
  const std::uint64_t distinct = kernels.size();
  MESSAGE(
      fmt::format("{} forwards from {} threads, {} differ from the serial result; kernel cache: {} compiled, {} "
                  "from disk, {} memory hits; {} distinct kernels",
                  total, kThreads, wrong, delta.misses, delta.disk_hits, delta.memory_hits, distinct));
  CHECK(total == kThreads * kCalls);
  CHECK(wrong == 0);
  CHECK(delta.misses + delta.disk_hits == distinct);
  CHECK(delta.compiles == delta.misses);
  CHECK(layer.kernels_built() == static_cast<int>(role_keys.size()));
}

TEST_CASE("a batch size's first forward compiles without the layer's lock: other threads' warm forwards go on") {
  // A server meets a new batch size while it serves others: the new size's NVRTC builds take seconds, and a layer
  // that compiled them under its lock stalled every other thread's forward for that long.
  runtime::ScopedContext ctx(0);
  // A token capacity of this run's own (every role kernel's constant, not the weight transforms'), so that the cold
  // size's kernels are compiled here, not found in memory or on disk.
  std::random_device entropy;
  codegen::MoeConfig config = gpu_test::small_config("unlocked", 16, 4, 1024, 512);
  config.token_capacity = 16 + int(entropy() % 1000);
  if (config.token_capacity >= 256) ++config.token_capacity;  // never the default the other cases build
  MESSAGE("token capacity " << config.token_capacity);
  const reference::MoeProblem p = oracle::problem_of(config);
  const oracle::RandomWeights w = oracle::random_weights(p, gpu_test::seed() ^ 0x10CCull);
  runtime::MoeLayer layer(config, w.device());
  constexpr int kWarm = 8, kCold = 1;  // B = 1 runs the unit schedule's kernel, B = 8 the stream one
  const oracle::RandomInputs warm_in = oracle::random_inputs(p, kWarm, oracle::RoutingKind::uniform, 11);
  const oracle::RandomInputs cold_in = oracle::random_inputs(p, kCold, oracle::RoutingKind::uniform, 12);
  DeviceInputs warm_dev(p, kWarm), cold_dev(p, kCold);
  CUstream sw = nullptr, sc = nullptr;
  MOEJIT_CU(cuStreamCreate, &sw, CU_STREAM_NON_BLOCKING);
  MOEJIT_CU(cuStreamCreate, &sc, CU_STREAM_NON_BLOCKING);
  warm_dev.upload(warm_in, sw);
  cold_dev.upload(cold_in, sc);
  MOEJIT_CU(cuStreamSynchronize, sc);
  layer.forward(warm_dev.args(kWarm), sw);  // B = 8 built and warm
  MOEJIT_CU(cuStreamSynchronize, sw);

  const cache::CounterSnapshot before = jit::KernelCache::global().counters();
  std::atomic<bool> cold_done{false};
  std::string failure;
  std::jthread cold([&] {  // joined on any throw below
    try {
      const runtime::ScopedContext own(0);
      layer.forward(cold_dev.args(kCold), sc);
      MOEJIT_CU(cuStreamSynchronize, sc);
    } catch (const std::exception& e) {
      failure = e.what();
    }
    cold_done = true;
  });
  while (jit::KernelCache::global().counters().misses == before.misses && !cold_done)
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  const bool compiling = !cold_done;  // the cold size's first kernel build has begun and its forward is not done
  for (int i = 0; i < 20; ++i) {
    MOEJIT_CU(cuMemsetD8Async, warm_dev.y.ptr(), 0xFF, warm_dev.y.bytes(), sw);
    layer.forward(warm_dev.args(kWarm), sw);
    MOEJIT_CU(cuStreamSynchronize, sw);
  }
  // Under the lock, the warm forwards could only run once every cold build had finished.
  const std::uint64_t compiled_meanwhile = jit::KernelCache::global().counters().compiles - before.compiles;
  const bool cold_ran_on = !cold_done;
  cold.join();
  CHECK(failure == "");
  if (compiling) {
    CHECK(compiled_meanwhile == 0);  // 20 warm forwards while the cold size's first build was still running
    CHECK(cold_ran_on);
  } else {
    WARN_MESSAGE(compiling, "the cold size compiled nothing (its kernels were on disk): the lock was not tested");
  }
  CHECK(cosine_vs_reference(w, p, warm_in, download_sync(warm_dev.y, sw)) >= 0.99999);
  CHECK(cosine_vs_reference(w, p, cold_in, download_sync(cold_dev.y, sc)) >= 0.99999);
  layer.release_stream(sw);
  layer.release_stream(sc);
  MOEJIT_CU(cuStreamDestroy, sw);
  MOEJIT_CU(cuStreamDestroy, sc);
}
