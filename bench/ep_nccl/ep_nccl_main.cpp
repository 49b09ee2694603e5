// moejit_ep_nccl: expert parallelism on R GPUs through NCCL, one process per
// GPU as engines run it (or one process for all: --single-process).
//
//   moejit_ep_nccl check --launch 2     every routing of both models against the one-GPU layer
//   moejit_ep_nccl bench --launch 2     EP against all-to-all + layer + all-to-all (and all-gather + layer +
//   reduce-scatter) moejit_ep_nccl soak --launch 2 --die-rank 1 --die-after 20
//                                       a rank killed mid-run: the survivor reports it and exits 3
#include <fmt/format.h>
#include <signal.h>
#include <stdlib.h>
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <filesystem>
#include <random>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "bench/bench_common.hpp"
#include "bench/ep_nccl/ep_nccl_runs.hpp"
#include "bench/ep_nccl/rank_launch.hpp"
#include "runtime/device.hpp"
#include "runtime/driver_api.hpp"
#include "runtime/nccl/nccl_peers.hpp"

namespace moejit::bench {

void emit(const EpNcclOptions& o, const std::string& text, const std::string& json) {
  const std::string prefix = o.rank >= 0 ? fmt::format("[rank {}] ", o.rank) : "";
  // One write a line, so that the ranks' lines do not interleave within one.
  std::string out;
  if (o.json) {
    out = json + "\n";
  } else {
    std::size_t at = 0;
    while (at <= text.size()) {
      const std::size_t nl = text.find('\n', at);
      out += prefix + text.substr(at, nl == std::string::npos ? std::string::npos : nl - at) + "\n";
      if (nl == std::string::npos) break;
      at = nl + 1;
    }
  }
  std::fwrite(out.data(), 1, out.size(), stdout);
  std::fflush(stdout);
}

namespace {
constexpr const char* kUsage =
    "usage: moejit_ep_nccl check|bench|soak (--launch R | --single-process R | --rank r --ranks R --id-file F)\n"
    "                      [options]\n"
    "\n"
    "Expert parallelism on R GPUs over NCCL (docs/expert-parallelism.md): each rank a MoeLayer of E / R experts\n"
    "on its own GPU, its workspace a symmetric NCCL window (or CUDA IPC), the ranks' forwards talking only through\n"
    "their workspaces.\n"
    "\n"
    "commands:\n"
    "  check   every B and routing (the operator's four, an idle last rank, all-remote tokens) against the\n"
    "          one-GPU layer of all experts on the same global inputs (cosine >= 0.99999, no NaN/Inf/unwritten),\n"
    "          and the uniform routing's forward captured in a CUDA graph, replayed --replays times, bitwise equal\n"
    "  bench   per-rank B: the slowest rank's median forward beside NCCL all-to-all + the one-GPU layer of the\n"
    "          rank's experts + all-to-all (NCCL 2.28+) and all-gather + layer + reduce-scatter, the HBM floor,\n"
    "          and the bytes between GPUs and their GB/s\n"
    "  soak    --forwards forwards of the first model and batch; with --die-rank, that rank kills itself\n"
    "          (SIGKILL) with a forward in flight, and the others must report it and exit 3 (--launch then\n"
    "          exits 0 if they all did: the kill test passed)\n"
    "\n"
    "processes:\n"
    "  --launch R           start R rank processes of this program (GPU r each) and wait for them; exit 0 only if\n"
    "                       every rank did; a rank still running 20 s past its longest bound (4 rank timeouts, the\n"
    "                       init timeout, 2 minutes of a timed loop) after another failed is killed as hung\n"
    "  --rank r --ranks R --id-file F\n"
    "                       run one rank (what --launch starts; an engine's launcher can start them too): rank 0\n"
    "                       writes NCCL's unique id to F, the others wait for it; rank 0 removes F once the\n"
    "                       communicator has formed, so a later run never reads this run's id\n"
    "  --single-process R   every rank in this process (ncclCommInitAll over GPUs 0..R-1)\n"
    "\n"
    "options:\n"
    "  --model M[,M]        glm5.2, dsv4.1-flash (default: both)\n"
    "  --batches LIST       per-rank tokens B (default 1,2,4,8,16,32,64,128,256; soak: the first, default 8)\n"
    "  --routings LIST      check: 0-3 uniform, one-expert, zipf, sparse; 4 last-rank-idle; 5 all-remote\n"
    "  --replays N          check: replays of the uniform routing's captured forward (default 100)\n"
    "  --peers window|ipc   how a rank finds the others' workspaces: NCCL's symmetric windows (needs the NCCL of\n"
    "                       moejit's headers, 2.28) or CUDA IPC handles over NCCL (any NCCL from 2.27);\n"
    "                       default: window where the loaded NCCL allows it\n"
    "  --seed S             the global inputs' seed, the same on every rank (default: random; --launch passes it)\n"
    "  --timeout-ms T       the cross-rank wait of the workspace header, 1..600000 (default 2000)\n"
    "  --init-timeout-ms T  NCCL's unique id and communicator, 1..3600000 (default 120000)\n"
    "  --forwards N         soak: forwards to run (default 200)\n"
    "  --die-rank r --die-after n\n"
    "                       soak: rank r kills itself after launching its forward n\n"
    "  --deadline-s S       --launch: every rank still running after S seconds is killed (default: none)\n"
    "  --json               results as JSON Lines (the launcher's own lines go to stderr)\n"
    "\n"
    "environment: MOEJIT_NCCL_LIBRARY (the libnccl.so.2 to load), NCCL_NVLS_ENABLE (set to 0 if unset: NVLink\n"
    "multicast stays off). Exit: 0 passed, 1 failed or error, 2 usage, 3 a rank was lost, 77 no GPU driver.\n";

[[noreturn]] void usage_error(const std::string& what) {
  fmt::print(stderr, "moejit_ep_nccl: {}\n(moejit_ep_nccl --help for the options)\n", what);
  std::exit(2);
}

int ranged(const std::string& flag, const std::string& text, int lo, int hi) {
  int v = 0;
  try {
    v = parse_int(flag, text);
  } catch (const std::exception& e) {
    usage_error(e.what());
  }
  if (v < lo || v > hi) usage_error(fmt::format("{} {} is outside [{}, {}]", flag, v, lo, hi));
  return v;
}

EpNcclOptions parse(int argc, char** argv, std::vector<std::string>* forwarded) {
  EpNcclOptions o;
  bool batches_given = false;
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    auto value = [&]() -> std::string {
      if (i + 1 >= argc) usage_error(a + " needs a value");
      return argv[++i];
    };
    if (a == "--help" || a == "-h") {
      fmt::print("{}", kUsage);
      std::exit(0);
    } else if (a == "check" || a == "bench" || a == "soak") {
      if (!o.command.empty()) usage_error(fmt::format("two commands: {} and {}", o.command, a));
      o.command = a;
    } else if (a == "--launch") {
      o.launch = ranged(a, value(), 2, 64);
    } else if (a == "--single-process") {
      o.single = ranged(a, value(), 2, 64);
    } else if (a == "--rank") {
      o.rank = ranged(a, value(), 0, 63);
    } else if (a == "--ranks") {
      o.ranks = ranged(a, value(), 2, 64);
    } else if (a == "--id-file") {
      o.id_file = value();
    } else if (a == "--model") {
      o.models = split_list(value());
      for (const std::string& m : o.models)
        if (m != "glm5.2" && m != "dsv4.1-flash")
          usage_error(fmt::format("--model {} is not one of glm5.2, dsv4.1-flash", m));
    } else if (a == "--batches") {
      o.batches.clear();
      for (const std::string& b : split_list(value())) o.batches.push_back(ranged(a, b, 1, 256));
      batches_given = true;
    } else if (a == "--routings") {
      o.routings.clear();
      for (const std::string& r : split_list(value())) o.routings.push_back(ranged(a, r, 0, 5));
    } else if (a == "--replays") {
      o.replays = ranged(a, value(), 0, 100000);
    } else if (a == "--peers") {
      const std::string v = value();
      if (v == "window")
        o.peers = PeerTable::window;
      else if (v == "ipc")
        o.peers = PeerTable::ipc;
      else
        usage_error(fmt::format("--peers {} is not one of window, ipc", v));
    } else if (a == "--seed") {
      const std::string v = value();
      char* end = nullptr;
      o.seed = std::strtoull(v.c_str(), &end, 0);
      if (v.empty() || *end) usage_error(fmt::format("--seed {} is not a whole number", v));
    } else if (a == "--timeout-ms") {
      o.rank_timeout = std::chrono::milliseconds(ranged(a, value(), 1, 600000));
    } else if (a == "--init-timeout-ms") {
      o.init_timeout = std::chrono::milliseconds(ranged(a, value(), 1, 3600000));
    } else if (a == "--forwards") {
      o.forwards = ranged(a, value(), 1, 1000000);
    } else if (a == "--die-rank") {
      o.die_rank = ranged(a, value(), 0, 63);
    } else if (a == "--die-after") {
      o.die_after = ranged(a, value(), 1, 1000000);
    } else if (a == "--deadline-s") {
      o.deadline_s = ranged(a, value(), 1, 86400);
    } else if (a == "--json") {
      o.json = true;
    } else {
      usage_error(fmt::format("unknown argument {}", a));
    }
  }
  // What a rank started by --launch gets again: everything but the process options (and the seed, which the
  // launcher gives every rank).
  const std::vector<std::string> process = {"--launch", "--rank", "--ranks", "--id-file", "--single-process", "--seed"};
  const std::vector<std::string> valued = {"--model",    "--batches",    "--routings",        "--replays",
                                           "--peers",    "--timeout-ms", "--init-timeout-ms", "--forwards",
                                           "--die-rank", "--die-after"};
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    if (std::find(process.begin(), process.end(), a) != process.end()) {
      ++i;
      continue;
    }
    forwarded->push_back(a);
    if (std::find(valued.begin(), valued.end(), a) != valued.end() && i + 1 < argc) forwarded->push_back(argv[++i]);
  }
  if (o.command.empty()) usage_error("no command: check, bench or soak");
  const int modes = (o.launch > 0) + (o.single > 0) + (o.rank >= 0);
  if (modes != 1) usage_error("give exactly one of --launch R, --single-process R, --rank r (with --ranks, --id-file)");
  if (o.rank >= 0 && (o.ranks < 2 || o.id_file.empty())) usage_error("--rank needs --ranks R (2..64) and --id-file F");
  if (o.rank >= o.ranks && o.rank >= 0) usage_error(fmt::format("--rank {} is outside [0, {})", o.rank, o.ranks));
  if (o.command == "soak" && !batches_given) o.batches = {8};
  const int R = o.launch + o.single + (o.rank >= 0 ? o.ranks : 0);
  if (o.die_rank >= 0) {
    if (o.command != "soak") usage_error("--die-rank is a soak option");
    if (o.single) usage_error("--die-rank needs one process a rank (--launch or --rank), not --single-process");
    if (o.die_rank >= R) usage_error(fmt::format("--die-rank {} is outside [0, {})", o.die_rank, R));
    if (o.die_after == 0) usage_error("--die-rank needs --die-after n");
    // The survivor must see the loss at a later forward: the rank's last one may complete before it dies.
    if (o.die_after >= o.forwards)
      usage_error(fmt::format("--die-after {} must be below --forwards {}", o.die_after, o.forwards));
    // A survivor's report writes into every peer's workspace; an IPC mapping of a dead process's memory is
    // undefined (an NCCL window's is held by the importer).
    if (o.peers == PeerTable::ipc) usage_error("--die-rank needs --peers window (a dead rank's IPC memory is gone)");
  }
  return o;
}

// --launch R: this program's ranks as child processes, one GPU each.
int launch(const EpNcclOptions& o, const std::vector<std::string>& forwarded) {
  // The launcher's own lines go to stderr under --json, so the ranks' stdout stays JSON Lines.
  std::FILE* say = o.json ? stderr : stdout;
  const int gpus = runtime::device_count();  // no driver: skipped (77), before any process or file
  if (gpus < o.launch)
    throw std::runtime_error(fmt::format("--launch {}: {} GPUs are visible, one a rank", o.launch, gpus));
  char dir_template[] = "/tmp/moejit-ep-nccl-XXXXXX";
  const char* dir = mkdtemp(dir_template);
  if (!dir) throw std::runtime_error("cannot create a folder under /tmp for NCCL's unique id");
  const std::string id_file = std::string(dir) + "/nccl-id";
  const std::uint64_t seed = o.seed ? o.seed : std::random_device{}() * 0x100000001ull + std::random_device{}();
  std::vector<std::string> args = {std::filesystem::read_symlink("/proc/self/exe").string()};
  args.insert(args.end(), forwarded.begin(), forwarded.end());
  for (const std::string& a : {std::string("--ranks"), std::to_string(o.launch), std::string("--id-file"), id_file,
                               std::string("--seed"), std::to_string(seed)})
    args.push_back(a);
  LaunchOptions lo;
  // A survivor reports a lost rank within 4 rank timeouts (its EP waits), or its watchdog names the step it
  // waited in (nccl_ranks.hpp): the grace outlasts both before the launcher calls it hung.
  lo.grace =
      std::max({std::chrono::milliseconds(4 * o.rank_timeout), o.init_timeout, kSetupStepTimeout, kTimedStepTimeout}) +
      std::chrono::milliseconds(20000);
  lo.deadline = std::chrono::seconds(o.deadline_s);
  fmt::print(say, "moejit_ep_nccl: {} ranks, seed {}, id file {}\n", o.launch, seed, id_file);
  std::fflush(say);
  const std::vector<RankExit> exits = launch_ranks(args, o.launch, lo, [&](const RankExit& e) {
    fmt::print(say, "moejit_ep_nccl: {}\n", describe(e));
    std::fflush(say);
  });
  // Rank 0 removes the id file once the communicator formed (nccl_ranks.cpp): one left behind means it did not.
  const bool id_left = std::filesystem::exists(id_file);
  std::filesystem::remove_all(dir);
  if (o.die_rank >= 0) {
    // The kill test passes when the killed rank died by SIGKILL and every other reported the loss (exit 3)
    // within the grace, none killed as hung.
    bool ok = true;
    double last = 0;
    for (const RankExit& e : exits) {
      ok = ok && (e.rank == o.die_rank ? e.signal == SIGKILL && !e.hung : e.code == kExitLostRank);
      if (e.rank != o.die_rank) last = std::max(last, e.seconds);
    }
    fmt::print(say, "moejit_ep_nccl: kill test {}: rank {} killed with a forward in flight; {}\n",
               ok ? "passed" : "FAILED", o.die_rank,
               ok ? fmt::format("every other rank reported it and exited {} (the last {:.1f} s after the launch)",
                                kExitLostRank, last)
                  : std::string("not every other rank reported it (above)"));
    return ok ? 0 : 1;
  }
  int failed = 0, skipped = 0;
  for (const RankExit& e : exits) failed += !e.ok(), skipped += e.code == 77;
  if (skipped == o.launch) {
    fmt::print(say, "moejit_ep_nccl: skipped: every rank found no CUDA driver\n");
    return 77;
  }
  if (!failed && id_left) {
    fmt::print(say, "moejit_ep_nccl: FAILED: every rank passed, but rank 0 left its NCCL id file {}\n", id_file);
    return 1;
  }
  fmt::print(
      say, "moejit_ep_nccl: {}\n",
      failed ? fmt::format("{} of {} ranks failed", failed, o.launch) : fmt::format("all {} ranks passed", o.launch));
  return failed ? 1 : 0;
}

int body(int argc, char** argv) {
  std::vector<std::string> forwarded;
  EpNcclOptions o = parse(argc, argv, &forwarded);
  setenv("NCCL_NVLS_ENABLE", "0", 0);  // moejit never uses NVLink multicast; nor may the baseline's collectives
  if (o.launch) return launch(o, forwarded);
  runtime::driver();  // no driver: "skipped" (77) before any NCCL or file
  NcclRanks ranks = o.single ? NcclRanks::all_in_process(o.single)
                             : NcclRanks::one_per_process(o.rank, o.ranks, o.id_file, o.init_timeout);
  if (!o.peers) o.peers = ranks.api().lsa_windows ? PeerTable::window : PeerTable::ipc;
  if (o.die_rank >= 0 && *o.peers == PeerTable::ipc)
    throw std::runtime_error(
        fmt::format("--die-rank needs NCCL windows (a dead rank's IPC memory is gone), and the "
                    "loaded NCCL {} cannot give moejit's kernels one (built with {})",
                    ranks.api().version, runtime::k_nccl_built_version));
  if (o.seed == 0 && o.single) o.seed = std::random_device{}();
  emit(o,
       fmt::format("{} on {} of {} ranks (GPU {}), NCCL {} ({}), peer table {}, seed {}", o.command,
                   ranks.local().size() == 1 ? fmt::format("rank {}", ranks.local()[0].rank) : "all", ranks.ranks(),
                   ranks.local()[0].device, ranks.api().version, runtime::nccl_library(), peer_table_name(*o.peers),
                   o.seed),
       nlohmann::json{{"command", o.command},
                      {"ranks", ranks.ranks()},
                      {"nccl", ranks.api().version},
                      {"peer_table", peer_table_name(*o.peers)},
                      {"seed", o.seed}}
           .dump());
  const int rc = o.command == "check"   ? run_check(ranks, o)
                 : o.command == "bench" ? run_bench(ranks, o)
                                        : run_soak(ranks, o);
  return rc;
}

}  // namespace
}  // namespace moejit::bench

int main(int argc, char** argv) {
  return moejit::bench::guarded_main("moejit_ep_nccl", argc, argv, moejit::bench::body);
}
