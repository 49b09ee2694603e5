// The production runtime on the GPU, one layer's life: a captured decode step
// replayed, a forward launching its own B's plan whichever B ran first, and
// decoded scales. (Shared resources and partitions: test_runtime_sharing_gpu.cpp;
// threads: test_runtime_threads_gpu.cpp; the compute CTAs' traces:
// test_trace_gpu.cpp.)
#include <doctest/doctest.h>
#include <fmt/format.h>

#include <memory>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include "codegen/sm_probe_kernel.hpp"
#include "gpu_test_util.hpp"
#include "jit/kernel_builder.hpp"
#include "oracle/moe_check.hpp"

using namespace moejit;
using gpu_test::bad_elements;
using gpu_test::cosine_vs_reference;
using gpu_test::DeviceInputs;
using gpu_test::download_sync;
using runtime::DeviceBuffer;

namespace {
int header_epoch(const runtime::MoeLayer& layer, CUstream s) {
  contract::MoeHeader h{};
  MOEJIT_CU(cuMemcpyDtoH, &h, layer.workspace(s) + layer.workspace_layout().header, sizeof(h));
  return h.epoch;
}

// A small layer's weights and B = 8 inputs, uploaded on a non-blocking stream of the case's own (a server's,
// not the legacy default stream), whose forward's y must be whole and at the fast path's bar.
struct StreamCase {
  static constexpr int B = 8;
  codegen::MoeConfig config;
  reference::MoeProblem p;
  oracle::RandomWeights w;
  oracle::RandomInputs in;
  DeviceInputs dev;
  CUstream stream = nullptr;
  StreamCase(const char* name, std::uint64_t seed)
      : config(gpu_test::small_config(name, 32, 4, 1024, 512)),
        p(oracle::problem_of(config)),
        w(oracle::random_weights(p, seed)),
        in(oracle::random_inputs(p, B, oracle::RoutingKind::uniform, seed + 1)),
        dev(p, B) {
    MOEJIT_CU(cuStreamCreate, &stream, CU_STREAM_NON_BLOCKING);
    dev.upload(in, stream);
  }
  ~StreamCase() { runtime::driver().cuStreamDestroy(stream); }
  StreamCase(const StreamCase&) = delete;
  StreamCase& operator=(const StreamCase&) = delete;
  void check_y() const {
    const std::vector<std::uint16_t> y = download_sync(dev.y, stream);
    CHECK(bad_elements(y) == 0);
    CHECK(cosine_vs_reference(w, p, in, y) >= 0.99999);
  }
};

}  // namespace

TEST_CASE("a captured decode step of two layers replays 100 times bitwise like eager execution") {
  runtime::ScopedContext ctx(0);
  const std::uint64_t seed = gpu_test::seed() ^ 0xC0FFEEull;
  MESSAGE("MOEJIT_TEST_SEED=" << gpu_test::seed());
  const int B = 24;
  // Layer 1 takes MXFP8 x; layer 2 (other weights, other experts, PDL) takes layer 1's BF16 y.
  const codegen::MoeConfig c1 = gpu_test::small_config("capture-l1", 32, 4, 1024, 512);
  const codegen::MoeConfig c2 = gpu_test::small_config("capture-l2", 64, 6, 1024, 768);
  const reference::MoeProblem p1 = oracle::problem_of(c1), p2 = oracle::problem_of(c2);
  const oracle::RandomWeights w1 = oracle::random_weights(p1, seed + 1), w2 = oracle::random_weights(p2, seed + 2);
  runtime::MoeLayer layer1(c1, w1.device());
  runtime::MoeLayerOptions bf16;
  bf16.codegen.input_bf16 = true;
  bf16.pdl = true;  // layer 2's child graph has programmatic edges; layer 1's full ones
  runtime::MoeLayer layer2(c2, w2.device(), bf16);

  DeviceInputs in1(p1, B), in2(p2, B);
  runtime::MoeForwardArgs a1 = in1.args(B), a2 = in2.args(B);
  a2.x_q = a2.x_scales = 0;
  a2.x_bf16 = in1.y.ptr();

  CUstream capture = nullptr, eager = nullptr;
  MOEJIT_CU(cuStreamCreate, &capture, CU_STREAM_NON_BLOCKING);
  MOEJIT_CU(cuStreamCreate, &eager, CU_STREAM_NON_BLOCKING);
  // Cold inside the capture: planning, compiling and the workspace happen here.
  MOEJIT_CU(cuStreamBeginCapture, capture, CU_STREAM_CAPTURE_MODE_GLOBAL);
  layer1.forward(a1, capture);
  layer2.forward(a2, capture);
  CUgraph step = nullptr;
  MOEJIT_CU(cuStreamEndCapture, capture, &step);
  CUgraphExec exec = nullptr;
  MOEJIT_CU(cuGraphInstantiateWithFlags, &exec, step, 0);
  CHECK(layer1.graph_counters().built == 1);
  CHECK(layer2.graph_counters().built == 1);

  int mismatches = 0, bad = 0;
  double worst_cosine = 1.0;
  const int replays = 100;
  for (int i = 0; i < replays; ++i) {
    const oracle::RandomInputs h1 = oracle::random_inputs(p1, B, oracle::RoutingKind::uniform, seed + 100 + 2 * i),
                               h2 = oracle::random_inputs(p2, B, oracle::RoutingKind::uniform, seed + 101 + 2 * i);
    in1.upload(h1, capture);
    MOEJIT_CU(cuMemcpyHtoDAsync, in2.ids.ptr(), h2.routing.ids.data(), h2.routing.ids.size() * 4, capture);
    MOEJIT_CU(cuMemcpyHtoDAsync, in2.w.ptr(), h2.routing.weights.data(), h2.routing.weights.size() * 4, capture);
    MOEJIT_CU(cuMemsetD8Async, in1.y.ptr(), 0xFF, in1.y.bytes(), capture);
    MOEJIT_CU(cuMemsetD8Async, in2.y.ptr(), 0xFF, in2.y.bytes(), capture);
    MOEJIT_CU(cuGraphLaunch, exec, capture);
    const std::vector<std::uint16_t> g1 = download_sync(in1.y, capture), g2 = download_sync(in2.y, capture);

    MOEJIT_CU(cuMemsetD8Async, in1.y.ptr(), 0xFF, in1.y.bytes(), eager);
    MOEJIT_CU(cuMemsetD8Async, in2.y.ptr(), 0xFF, in2.y.bytes(), eager);
    layer1.forward(a1, eager);
    layer2.forward(a2, eager);
    const std::vector<std::uint16_t> e1 = download_sync(in1.y, eager), e2 = download_sync(in2.y, eager);
    mismatches += (g1 != e1) + (g2 != e2);
    bad += static_cast<int>(bad_elements(g1) + bad_elements(g2));
    if (i == 0 || i == replays - 1) worst_cosine = std::min(worst_cosine, cosine_vs_reference(w1, p1, h1, g1));
  }
  MESSAGE(fmt::format("{} replays: {} mismatches vs eager, {} NaN/Inf/unwritten, layer-1 cosine {:.7f}", replays,
                      mismatches, bad, worst_cosine));
  CHECK(mismatches == 0);
  CHECK(bad == 0);
  CHECK(worst_cosine >= 0.99999);
  // Every replay ran one forward per layer (the epoch counts them: the last compute CTA or, on the unit
  // schedule, the finalize grid advances it; nothing resets it), and the graphs were never rebuilt.
  CHECK(header_epoch(layer1, capture) == replays);
  CHECK(header_epoch(layer2, capture) == replays);
  CHECK(header_epoch(layer1, eager) == replays);
  CHECK(layer1.graph_counters().built == 2);  // the captured one and the eager stream's
  CHECK(layer1.graph_counters().warm_hits == replays - 1);

  // Host route checks copy to the host, which a capture cannot contain: refused by name.
  runtime::MoeLayerOptions checked;
  checked.check_routes_on_host = true;
  runtime::MoeLayer layer3(c1, w1.device(), checked);
  MOEJIT_CU(cuStreamBeginCapture, capture, CU_STREAM_CAPTURE_MODE_GLOBAL);
  CHECK_THROWS_WITH(layer3.forward(a1, capture), doctest::Contains("check_routes_on_host"));
  CUgraph unused = nullptr;
  runtime::driver().cuStreamEndCapture(capture, &unused);
  if (unused) runtime::driver().cuGraphDestroy(unused);

  layer1.release_stream(capture);
  layer1.release_stream(eager);
  layer2.release_stream(capture);
  layer2.release_stream(eager);
  runtime::driver().cuGraphExecDestroy(exec);
  runtime::driver().cuGraphDestroy(step);
  runtime::driver().cuStreamDestroy(capture);
  runtime::driver().cuStreamDestroy(eager);
}

TEST_CASE(
    "a layer refuses a GPU the machine lacks and the per-thread stream handle, and host route checks read the ids the "
    "caller's stream wrote") {
  runtime::ScopedContext ctx(0);
  StreamCase c("routes-check", gpu_test::seed() + 7);
  runtime::MoeLayerOptions far;
  far.device = 4096;
  try {
    runtime::MoeLayer layer(c.config, c.w.device(), far);
    FAIL("a layer on GPU 4096 was built");
  } catch (const runtime::InvalidInput& e) {
    CHECK(std::string(e.field()) == "device");
    CHECK(doctest::String(e.what()) == doctest::Contains("device = 4096 is outside the allowed range [0, "));
  }

  // The router's ids land on a non-blocking stream 200 ms late (behind a spinning kernel), over ids no layer
  // accepts. The check must read them in that stream's order: the legacy default stream does not wait for it.
  runtime::MoeLayerOptions checked;
  checked.check_routes_on_host = true;
  runtime::MoeLayer layer(c.config, c.w.device(), checked);
  CUstream router = c.stream;
  const std::vector<std::int32_t> stale(std::size_t(c.B) * c.p.top_k, 9999);
  MOEJIT_CU(cuStreamSynchronize, router);
  MOEJIT_CU(cuMemcpyHtoD, c.dev.ids.ptr(), stale.data(), stale.size() * 4);
  const runtime::DeviceInfo info = runtime::query_device(0);
  const jit::BuildArtifacts spin =
      jit::build_kernel(codegen::sm_probe_spec(*codegen::parse_target(info.target_name())));
  const runtime::LoadedKernel spinner(spin.cubin, spin.spec.entry_name());
  DeviceBuffer sms(4), clock(8);
  CUdeviceptr out = sms.ptr(), clock_out = clock.ptr();
  std::uint32_t spin_ns = 200000000;
  void* spin_args[] = {&out, &spin_ns, &clock_out};
  spinner.launch(runtime::LaunchDims{1, 32, 0}, router, spin_args);
  MOEJIT_CU(cuMemcpyHtoDAsync, c.dev.ids.ptr(), c.in.routing.ids.data(), c.in.routing.ids.size() * 4, router);
  MOEJIT_CU(cuMemsetD8Async, c.dev.y.ptr(), 0xFF, c.dev.y.bytes(), router);
  CHECK_NOTHROW(layer.forward(c.dev.args(c.B), router));
  c.check_y();
  layer.release_stream(router);
  // A y one row short: the forward wrote past its end (only the Python wrapper checked shapes).
  const DeviceBuffer short_y(static_cast<std::size_t>(c.B - 1) * c.config.hidden * 2);
  runtime::MoeForwardArgs short_args = c.dev.args(c.B);
  short_args.y = short_y.ptr();
  const std::string short_message = "is invalid: it must be device memory holding the " +
                                    std::to_string(c.B * c.config.hidden * 2) + " B of B rows of BF16 y";
  CHECK_THROWS_WITH_AS(layer.forward(short_args, router), doctest::Contains(short_message.c_str()),
                       runtime::InvalidInput);
  // An allocation the GPU cannot hold names its size.
  CHECK_THROWS_WITH_AS(DeviceBuffer(std::size_t(1) << 50), doctest::Contains("cuMemAlloc of 1125899906842624 B failed"),
                       runtime::DriverError);
  // One handle for a different stream in each thread: their forwards would share one workspace.
  CHECK_THROWS_WITH_AS(layer.forward(c.dev.args(c.B), CU_STREAM_PER_THREAD),
                       doctest::Contains("stream = CU_STREAM_PER_THREAD (cudaStreamPerThread) is invalid"),
                       runtime::InvalidInput);
}

TEST_CASE("a forward from a thread with no current context runs in the layer's") {
  // A fresh thread (a server's worker) has no CUDA context: its first forward on a stream allocates the
  // stream's workspace and loads the kernels, which must happen in the layer's context (MoeLayer's
  // LayerContextScope), and the thread's own state is left as it was.
  runtime::ScopedContext ctx(0);
  StreamCase c("fresh-thread", gpu_test::seed() + 9);
  runtime::MoeLayer layer(c.config, c.w.device());
  MOEJIT_CU(cuMemsetD8Async, c.dev.y.ptr(), 0xFF, c.dev.y.bytes(), c.stream);
  MOEJIT_CU(cuStreamSynchronize, c.stream);
  std::string error;
  CUcontext after = reinterpret_cast<CUcontext>(1);
  std::thread worker([&] {
    try {
      layer.forward(c.dev.args(c.B), c.stream);
      runtime::driver().cuCtxGetCurrent(&after);
    } catch (const std::exception& e) {
      error = e.what();
    }
  });
  worker.join();
  CHECK(error.empty());
  CHECK(after == nullptr);  // the worker's (empty) current context restored
  c.check_y();
  layer.release_stream(c.stream);
}

TEST_CASE("a graph captured on a stream the layer released replays on another stream, after a warm capture too") {
  // An engine captures its decode step on a side stream, releases and destroys that stream, and replays the graph
  // on its main stream: the workspace the capture recorded must still be the layer's (it was freed with the
  // stream, and the replay wrote freed memory).
  runtime::ScopedContext ctx(0);
  StreamCase c("released-capture", gpu_test::seed() + 11);
  runtime::MoeLayer layer(c.config, c.w.device());
  for (const bool warm : {false, true}) {
    INFO("warm ", warm);
    CUstream side = nullptr;
    MOEJIT_CU(cuStreamCreate, &side, CU_STREAM_NON_BLOCKING);
    if (warm) layer.forward(c.dev.args(c.B), side);  // the capture below finds this graph
    MOEJIT_CU(cuStreamSynchronize, side);
    MOEJIT_CU(cuStreamBeginCapture, side, CU_STREAM_CAPTURE_MODE_GLOBAL);
    layer.forward(c.dev.args(c.B), side);
    CUgraph step = nullptr;
    MOEJIT_CU(cuStreamEndCapture, side, &step);
    CUgraphExec exec = nullptr;
    MOEJIT_CU(cuGraphInstantiateWithFlags, &exec, step, 0);
    layer.release_stream(side);
    MOEJIT_CU(cuStreamDestroy, side);
    // Memory the freed workspace would have gone back to, filled with what no forward leaves in a workspace.
    DeviceBuffer other(static_cast<std::size_t>(layer.workspace_bytes()));
    MOEJIT_CU(cuMemsetD8Async, other.ptr(), 0xA5, other.bytes(), c.stream);
    for (int replay = 0; replay < 2; ++replay) {
      MOEJIT_CU(cuMemsetD8Async, c.dev.y.ptr(), 0xFF, c.dev.y.bytes(), c.stream);
      MOEJIT_CU(cuGraphLaunch, exec, c.stream);
      c.check_y();
    }
    runtime::driver().cuGraphExecDestroy(exec);
    runtime::driver().cuGraphDestroy(step);
  }
  layer.release_stream(c.stream);
}

TEST_CASE("a layer built and run in one thread while another captures in global mode: both right, the capture whole") {
  // A server warms a second model while its decode step is being captured on a blocking stream. The new layer's
  // allocations, module loads, weight transforms and first forward must neither be refused under the capture's
  // global mode nor invalidate it (work on the legacy stream is ordered against every blocking stream).
  runtime::ScopedContext ctx(0);
  StreamCase a("global-capture-a", gpu_test::seed() ^ 0x61A0ull);  // captured
  StreamCase b("global-capture-b", gpu_test::seed() ^ 0x61B0ull);  // its layer built during the capture
  runtime::MoeLayer la(a.config, a.w.device(), {});
  CUstream blocking = nullptr;
  MOEJIT_CU(cuStreamCreate, &blocking, CU_STREAM_DEFAULT);
  MOEJIT_CU(cuStreamSynchronize, a.stream);
  MOEJIT_CU(cuStreamSynchronize, b.stream);
  la.forward(a.dev.args(a.B), blocking);  // warm: the captured forward finds its graph
  const std::vector<std::uint16_t> want = download_sync(a.dev.y, blocking);
  CHECK(cosine_vs_reference(a.w, a.p, a.in, want) >= 0.99999);

  MOEJIT_CU(cuStreamBeginCapture, blocking, CU_STREAM_CAPTURE_MODE_GLOBAL);
  struct CaptureEnd {  // a capture left open on a throw would poison every later case of the process
    CUstream s;
    bool ended = false;
    ~CaptureEnd() {
      if (ended) return;
      CUgraph g = nullptr;
      runtime::driver().cuStreamEndCapture(s, &g);
      if (g) runtime::driver().cuGraphDestroy(g);
    }
  } capture_end{blocking};
  MOEJIT_CU(cuMemsetD8Async, a.dev.y.ptr(), 0xFF, a.dev.y.bytes(), blocking);
  la.forward(a.dev.args(a.B), blocking);
  std::unique_ptr<runtime::MoeLayer> lb;
  std::string failure;
  std::thread([&] {
    try {
      const runtime::ScopedContext own(0);
      lb = std::make_unique<runtime::MoeLayer>(b.config, b.w.device(), runtime::MoeLayerOptions{});
      MOEJIT_CU(cuMemsetD8Async, b.dev.y.ptr(), 0xFF, b.dev.y.bytes(), b.stream);
      lb->forward(b.dev.args(b.B), b.stream);
    } catch (const std::exception& e) {
      failure = e.what();
    }
  }).join();
  CUgraph g = nullptr;
  const CUresult ended = runtime::driver().cuStreamEndCapture(blocking, &g);
  capture_end.ended = true;
  CHECK(failure == "");
  CHECK(ended == CUDA_SUCCESS);
  REQUIRE(g != nullptr);
  CUgraphExec exec = nullptr;
  MOEJIT_CU(cuGraphInstantiateWithFlags, &exec, g, 0);
  MOEJIT_CU(cuGraphLaunch, exec, blocking);
  CHECK(download_sync(a.dev.y, blocking) == want);
  REQUIRE(lb != nullptr);
  b.check_y();
  MOEJIT_CU(cuGraphExecDestroy, exec);
  MOEJIT_CU(cuGraphDestroy, g);
  lb->release_stream(b.stream);
  la.release_stream(blocking);
  MOEJIT_CU(cuStreamDestroy, blocking);
}

TEST_CASE("a forward of B launches B's plan, whichever batch size ran first") {
  // The kernels of B = 1 also serve B = 256 (the same compute kernel), but
  // the streaming roles' grids grow with B: a layer that kept the first B's
  // grids ran B = 256 on B = 1's 2 dispatch and 3 finalize CTAs.
  runtime::ScopedContext ctx(0);
  // A shape no other GPU test uses: the threads test below counts its own
  // compiles, and kernels of the same shape loaded here would be memory hits.
  const codegen::MoeConfig config = gpu_test::small_config("grids", 48, 6, 2048, 1024);
  const reference::MoeProblem p = oracle::problem_of(config);
  const oracle::RandomWeights w = oracle::random_weights(p, gpu_test::seed() ^ 0x6D1Dull);
  for (const codegen::ComputePath path : {codegen::ComputePath::exact, codegen::ComputePath::fast}) {
    runtime::MoeLayerOptions options;
    options.codegen.path = path;
    runtime::MoeLayer layer(config, w.device(), options);
    for (const int b : {1, config.token_capacity, 8}) {
      const DeviceInputs in(p, b);
      const std::vector<runtime::RoleLaunch> roles = layer.launches(in.args(b), nullptr);
      const codegen::MoeLaunchPlan plan = layer.plan(b);
      REQUIRE(roles.size() == std::size_t(plan.dispatch.launched ? 3 : 2));
      for (const runtime::RoleLaunch& r : roles) {
        const codegen::RolePlan& want = r.role == "dispatch"  ? plan.dispatch
                                        : r.role == "compute" ? plan.compute
                                                              : plan.finalize;
        INFO(codegen::path_name(path), " B=", b, " role ", r.role);
        CHECK(r.dims.grid == unsigned(want.grid));
        CHECK(r.dims.block == unsigned(want.threads));
        CHECK(r.dims.dynamic_smem == unsigned(want.smem_bytes));
      }
    }
  }
}

TEST_CASE("decoded scales (MoeCodegenOptions::decoded_scales) give the fast path's bytes and pass its checks") {
  // The decoder warp computes each scale exactly as the consumers' own decode (ue8m0_byte_value), and the
  // products and sums run in the same order: the output must not change by a bit. W2's codes spread over
  // [30, 220] so that the decoded values span most of the exponent range.
  runtime::ScopedContext ctx(0);
  const codegen::MoeConfig config = codegen::builtin_model("glm5.2");
  const reference::MoeProblem p = oracle::problem_of(config);
  oracle::WeightScales scales;
  scales.w2_lo = 30;
  scales.w2_hi = 220;
  const oracle::RandomWeights w = oracle::random_weights(p, gpu_test::seed() ^ 0xDEC0DEull, scales);
  runtime::MoeLayerOptions plain_options, decoded_options;
  plain_options.codegen.path = decoded_options.codegen.path = codegen::ComputePath::fast;
  decoded_options.codegen.decoded_scales = true;
  runtime::MoeLayer plain(config, w.device(), plain_options), decoded(config, w.device(), decoded_options);
  CUstream s;
  MOEJIT_CU(cuStreamCreate, &s, CU_STREAM_NON_BLOCKING);
  std::uint64_t case_seed = gpu_test::seed() ^ 0xDEC0DEull;
  for (const int b : {1, 8, 64, 256})
    for (const oracle::RoutingKind routing : {oracle::RoutingKind::uniform, oracle::RoutingKind::zipf}) {
      INFO("B=", b, " routing ", int(routing));
      CHECK(decoded.plan(b).decoded_scales);
      const oracle::RandomInputs in = oracle::random_inputs(p, b, routing, ++case_seed);
      DeviceInputs dev(p, b);
      dev.upload(in, s);
      plain.forward(dev.args(b), s);
      const std::vector<std::uint16_t> want = download_sync(dev.y, s);
      MOEJIT_CU(cuMemsetD8, dev.y.ptr(), 0xFF, dev.y.bytes());  // poison
      decoded.forward(dev.args(b), s);
      CHECK(download_sync(dev.y, s) == want);
      const oracle::MoeCheckResult r = oracle::check_forward(decoded, w, b, routing, case_seed);
      CHECK_MESSAGE(r.passed(), r.summary());
    }
  plain.release_stream(s);
  decoded.release_stream(s);
  MOEJIT_CU(cuStreamDestroy, s);
}
