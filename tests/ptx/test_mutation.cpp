// Thousands of random byte and line edits of real PTX: the parser must read
// each one or report a ParseError, never crash or read out of bounds (this
// test also runs under ASan+UBSan). A module it reads must print back
// byte for byte, and the passes over it must succeed or throw a PassError.
//
// A fixed list of seeds runs every time, plus one fresh seed that is printed;
// MOEJIT_MUTATION_SEED=<n> replays one seed alone.
#include <doctest/doctest.h>

#include <cstdio>
#include <cstdlib>
#include <random>

#include "ptx_passes/pipeline.hpp"
#include "tests/ptx/ptx_test_support.hpp"

using namespace moejit;

namespace {
struct Source {
  std::string name;
  std::string text;
  ptx::PipelineOptions options;  // passes that apply to the unmutated text
};

std::vector<Source> sources() {
  std::vector<Source> out;
  ptx::PipelineOptions smoke;
  smoke.occupancy = {{"", 1, 2, 64}};
  smoke.abi = {{"", std::nullopt, {"st.global"}, ""}};
  out.push_back({"smoke-sm_90a", test::nvrtc_ptx("smoke", test::sm90()), smoke});
  ptx::PipelineOptions tma;
  for (int i = 0; i < 3; ++i) tma.tensormaps.push_back({"", "moejit_tma_probe_param_" + std::to_string(i), 2});
  tma.version.cap = ptx::PtxVersion{8, 7};
  out.push_back({"tma-probe-sm_120a", test::nvrtc_ptx("tma-probe", test::sm120()), tma});
  ptx::PipelineOptions mma;
  mma.abi = {{"", std::nullopt, {"mma.sync.aligned.kind::mxf8f6f4"}, "sm_120a"}};
  mma.occupancy = {{"", 0, 0, 128}};
  out.push_back({"mma-probe-sm_120a", test::nvrtc_ptx("mma-probe", test::sm120()), mma});
  for (const std::string& f : test::fixture_names()) out.push_back({f, test::read_fixture(f), {}});
  out.back().options.occupancy = {{"", 0, 0, 32}};
  return out;
}

// Under the sanitizers (a -O0 build, several times slower) fewer per seed:
// still thousands in all, in a CI-friendly time.
#if defined(__SANITIZE_ADDRESS__)
constexpr int k_per_seed = 500;
#else
constexpr int k_per_seed = 1500;
#endif

// Bytes that matter to the grammar, so edits hit structure, not only names.
constexpr char k_interesting[] = "{}()[];,.\"/*\n\r\t :@%$0123456789_";

std::string mutate(std::string text, std::mt19937_64& rng) {
  auto pick = [&](size_t n) { return n == 0 ? size_t{0} : static_cast<size_t>(rng() % n); };
  auto line_bounds = [&](size_t at) {
    const size_t begin = text.rfind('\n', at == 0 ? 0 : at - 1);
    const size_t b = begin == std::string::npos || at == 0 ? 0 : begin + 1;
    const size_t e = text.find('\n', at);
    return std::make_pair(b, e == std::string::npos ? text.size() : e + 1);
  };
  const int edits = 1 + static_cast<int>(rng() % 3);
  for (int i = 0; i < edits && !text.empty(); ++i) {
    const size_t at = pick(text.size());
    switch (rng() % 8) {
      case 0: text[at] = static_cast<char>(rng() & 0xFF); break;
      case 1: text[at] = k_interesting[pick(sizeof(k_interesting) - 1)]; break;
      case 2: text.insert(at, 1, k_interesting[pick(sizeof(k_interesting) - 1)]); break;
      case 3: text.erase(at, 1 + pick(16)); break;
      case 4: {  // drop a line
        auto [b, e] = line_bounds(at);
        text.erase(b, e - b);
        break;
      }
      case 5: {  // duplicate a line
        auto [b, e] = line_bounds(at);
        text.insert(e, text.substr(b, e - b));
        break;
      }
      case 6: {  // move a line elsewhere
        auto [b, e] = line_bounds(at);
        const std::string line = text.substr(b, e - b);
        text.erase(b, e - b);
        text.insert(pick(text.size() + 1), line);
        break;
      }
      default: text.resize(at); break;  // truncate
    }
  }
  return text;
}

struct Tally {
  int parsed = 0, rejected = 0, passes_ok = 0, passes_failed = 0;
};

void run_seed(std::uint64_t seed, int mutations, const std::vector<Source>& srcs, Tally& tally) {
  std::mt19937_64 rng(seed);
  for (int i = 0; i < mutations; ++i) {
    const Source& src = srcs[rng() % srcs.size()];
    const std::string text = mutate(src.text, rng);
    INFO("seed " << seed << ", mutation " << i << " of " << src.name);
    try {
      ptx::Module m = ptx::Module::parse(text, src.name);
      ++tally.parsed;
      REQUIRE(m.print() == text);
      try {
        std::vector<ptx::PassStage> stages;
        ptx::make_pipeline(src.options).run(m, stages);
        ++tally.passes_ok;
      } catch (const ptx::PassError& e) {
        ++tally.passes_failed;
        REQUIRE(std::string(e.what()).rfind("pass '", 0) == 0);
      }
    } catch (const ptx::ParseError& e) {
      ++tally.rejected;
      REQUIRE(std::string(e.what()).find(": error: ") != std::string::npos);
    }
  }
}
}  // namespace

TEST_CASE("mutation: random edits of real PTX parse or report an error, never crash") {
  const std::vector<Source> srcs = sources();
  Tally tally;
  if (const char* replay = std::getenv("MOEJIT_MUTATION_SEED")) {
    run_seed(std::strtoull(replay, nullptr, 10), k_per_seed, srcs, tally);
    return;
  }
  const std::uint64_t fresh = std::random_device{}() | (std::uint64_t{std::random_device{}()} << 32);
  std::fprintf(stderr, "mutation test: fresh seed %llu (replay: MOEJIT_MUTATION_SEED=%llu)\n",
               static_cast<unsigned long long>(fresh), static_cast<unsigned long long>(fresh));
  for (std::uint64_t seed : std::vector<std::uint64_t>{1, 2, 3, 42, 1234, 20240611, 0xDEADBEEF, fresh})
    run_seed(seed, k_per_seed, srcs, tally);
  MESSAGE("parsed " << tally.parsed << " (passes ok " << tally.passes_ok << ", failed " << tally.passes_failed
                    << "), rejected " << tally.rejected);
  // Both outcomes happen, or the mutations are not testing anything.
  CHECK(tally.parsed + tally.rejected == 8 * k_per_seed);
  CHECK(tally.parsed > k_per_seed);
  CHECK(tally.rejected > k_per_seed);
  CHECK(tally.passes_ok > k_per_seed / 2);
  CHECK(tally.passes_failed > k_per_seed / 50);
}
