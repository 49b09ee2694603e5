// moejit precompile: fill the kernel cache offline, with no GPU, so a serving
// fleet starts warm. Compiles each distinct kernel once, in parallel.
#include <fmt/format.h>

#include <algorithm>
#include <chrono>
#include <mutex>
#include <thread>

#include "codegen/moe_config.hpp"
#include "jit/kernel_cache.hpp"
#include "jit/precompile.hpp"
#include "tools/cache_config.hpp"
#include "tools/cache_format.hpp"
#include "tools/cli_args.hpp"
#include "tools/codegen_flags.hpp"
#include "tools/commands.hpp"
#include "tools/precompile.hpp"

namespace moejit::tools {
namespace {
using Clock = std::chrono::steady_clock;

jit::PrecompileRequest parse_request(const Args& args) {
  jit::PrecompileRequest r;
  if (args.has("model") && args.has("config")) throw UsageError("--model and --config are alternatives; give one");
  if (auto name = args.get("model")) {
    r.config = builtin_model_flag(args, *name);
  } else if (auto file = args.get("config")) {
    r.config = codegen::load_moe_config(*file);
    if (args.has("shared-expert") && !r.config->shared_expert)
      throw UsageError(
          fmt::format("--shared-expert: {} defines no shared expert; add \"shared_expert\": "
                      "{{\"k_group\": 128}} to it",
                      excerpt(*file)));
  } else if (args.has("shared-expert")) {
    throw UsageError("--shared-expert needs --model or --config");
  }
  if (r.config) {
    r.config->ranks = static_cast<int>(args.get_int("ranks", r.config->ranks, 1, 32));
    validate_with_ranks(args, *r.config);
  } else if (args.has("ranks")) {
    throw UsageError("--ranks needs --model or --config");
  }
  // By default every B the workspace holds (a server meets any of them); the smoke kernel has no capacity.
  const int capacity = r.config ? r.config->token_capacity : 256;
  r.batches = parse_batches(args.get_or("batches", fmt::format("1-{}", capacity)));
  if (r.config && r.batches.back() > capacity)
    throw UsageError(fmt::format("--batches: B = {} exceeds the configuration's token capacity (allowed: 1-{})",
                                 r.batches.back(), capacity));
  if (!args.has("targets")) throw UsageError("--targets is required (e.g. --targets sm_90a,sm_120a)");
  r.targets = parse_targets(*args.get("targets"));
  r.options = codegen_options(args);
  if (r.config) {
    apply_recipe(args, *r.config, r.options);
  } else {
    // Without a model the kernels are codegen's own (the smoke kernel): a layer option or a batch list would be
    // ignored, and the command would not have compiled what it was asked for.
    if (args.has("batches")) throw UsageError("--batches needs --model or --config");
    for (const OptionSpec& c : codegen_option_specs())
      if (args.has(c.name)) throw UsageError(fmt::format("--{} needs --model or --config", c.name));
  }
  return r;
}

// Progress on stderr: one line when a kernel starts, one when it is done.
class Progress {
 public:
  explicit Progress(size_t total) : total_(total), start_(Clock::now()) {}
  double elapsed() const { return std::chrono::duration<double>(Clock::now() - start_).count(); }

  void started(const codegen::KernelSpec& spec) {
    std::lock_guard lock(mu_);
    fmt::print(stderr, "[{}/{}] current: {}\n", done_, total_, spec.summary());
  }
  void finished(const codegen::KernelSpec& spec, std::string_view outcome, double seconds) {
    std::lock_guard lock(mu_);
    ++done_;
    const double e = elapsed();
    const double eta = done_ ? e / double(done_) * double(total_ - done_) : 0.0;
    fmt::print(stderr, "[{}/{}] {} {} in {} | elapsed {}, ETA {}\n", done_, total_, outcome, spec.summary(),
               format_seconds(seconds), format_seconds(e), format_seconds(eta));
  }

 private:
  std::mutex mu_;
  size_t total_, done_ = 0;
  Clock::time_point start_;
};
}  // namespace

int cmd_precompile(int argc, char** argv) {
  std::vector<OptionSpec> options = {
      {"targets", true, "comma-separated targets to compile for, e.g. sm_90a,sm_120a (required)", "T,T"},
      {"model", true, "built-in model: glm5.2, dsv4.1-flash, gpt-oss-120b or gpt-oss-20b", "NAME"},
      {"config", true, "model configuration from a JSON file instead of --model (as `moejit plan --help` shows)",
       "FILE"},
      {"ranks", true, "expert-parallel ranks R, 1..32 (default 1, or the config file's)", "R"},
      {"batches", true,
       "tokens per rank: ranges and/or sizes, e.g. 1-256 or 1,2,4,8 (default: 1 to the token capacity, 256 for the "
       "built-in models)",
       "LIST"},
      {"jobs", true, "parallel compiles (default: the number of cores)", "N"},
      {"help", false, "this text"},
  };
  options.push_back(shared_expert_option());
  for (OptionSpec& o : codegen_option_specs()) options.push_back(std::move(o));
  Args args(options, argc, argv, 2);
  if (args.has("help")) {
    fmt::print(
        "usage: moejit precompile --targets T[,T] [--model M | --config FILE] [--ranks R] [--batches B] [--jobs N]\n"
        "                         [--path fast|exact] [--input-bf16] [--tile-n N] [--stages S] [--ctas-per-sm C]\n\n"
        "Enumerates exactly the distinct kernels the MoE layer of the configuration can need over the\n"
        "batch range, as the planner plans each shape on each target's built-in device profile\n"
        "(h200 for sm_90a, rtx-pro-5000 for sm_120a); batch sizes that share a kernel count once.\n"
        "A range means every size in it (a server meets any B), unlike `moejit plan`, where it\n"
        "means its powers of two. Compiles the kernels missing from the kernel cache in parallel\n"
        "and prints a summary. Without --model or --config it compiles every kernel codegen emits\n"
        "on its own. The layer options that change kernels (--path, --input-bf16, the overrides) must\n"
        "match the layer's for its forwards to find them. Needs no GPU. MOEJIT_NO_JIT is ignored here:\n"
        "compiling is this command's job.\n\n"
        "options:\n{}",
        format_options(options));
    return 0;
  }
  args.no_positional();
  const jit::PrecompileRequest request = parse_request(args);
  const unsigned cores = std::max(1u, std::thread::hardware_concurrency());
  const auto jobs = static_cast<int>(args.get_int("jobs", cores, 1, 1024));

  std::vector<codegen::KernelSpec> specs;
  try {
    specs = jit::kernels_to_precompile(request);
  } catch (const codegen::ConfigError& e) {
    if (e.field() != "targets") throw;
    throw UsageError(fmt::format("--targets: {}", e.what()));
  }
  std::string targets;
  for (codegen::Target t : request.targets) targets += fmt::format("{}{}", targets.empty() ? "" : ",", t.name());
  const std::string what = request.config
                               ? fmt::format("model {}, ranks {}", request.config->name, request.config->ranks)
                               : std::string("every kernel codegen emits");
  fmt::print(stderr, "precompile: {} distinct kernels for {} ({}, {} batch sizes), {} jobs\n", specs.size(), targets,
             what, request.batches.size(), std::min<size_t>(static_cast<size_t>(jobs), specs.size()));

  cache::Config config = disk_cache_config();
  config.no_jit = false;
  jit::KernelCache kc(config);
  Progress progress(specs.size());
  jit::PrecompileHooks hooks;
  hooks.started = [&](const codegen::KernelSpec& spec) { progress.started(spec); };
  hooks.finished = [&](const codegen::KernelSpec& spec, jit::PrecompileOutcome outcome, double seconds,
                       const std::string&) {
    progress.finished(spec,
                      outcome == jit::PrecompileOutcome::compiled ? "compiled"
                      : outcome == jit::PrecompileOutcome::cached ? "cached  "
                                                                  : "FAILED  ",
                      seconds);
  };
  const jit::PrecompileResult result = jit::precompile_kernels(kc, specs, jobs, hooks);

  const cache::CounterSnapshot c = kc.counters();
  fmt::print("distinct kernels  {}\n", specs.size());
  fmt::print("compiled          {}\n", result.compiled);
  fmt::print("already cached    {}\n", result.cached);
  if (result.failed) fmt::print("failed            {}\n", result.failed);
  fmt::print("time              {} (compile time {} over {} jobs)\n", format_seconds(progress.elapsed()),
             format_seconds(c.compile_millis / 1000.0), result.workers);
  fmt::print("cache             {}{}\n", kc.store().disk().dir(),
             kc.store().disk_writable() ? "" : " (not writable: kernels were kept in memory only)");
  fmt::print("counters          {}\n", format_counters_line(c));
  for (const std::string& e : result.errors) fmt::print(stderr, "moejit precompile: error: {}\n", e);
  // A fleet deploys after a precompile that succeeded and then runs with
  // MOEJIT_NO_JIT=1: success means every kernel is in the cache, not merely built.
  const size_t missing = jit::kernels_not_kept(kc, specs, result.done);
  if (missing) {
    std::string why;
    if (!kc.store().disk_writable())
      why = "the cache cannot be written: " + kc.store().disk_problem();
    else if (c.evictions)
      why = fmt::format(
          "{} were evicted to keep the cache under its cap MOEJIT_CACHE_MAX_BYTES = {}, which these kernels exceed; "
          "raise the cap",
          c.evictions, format_bytes(config.max_bytes));
    else
      why = "they were removed while precompile ran (by another process?)";
    fmt::print(stderr, "moejit precompile: error: {} of {} kernels are not in the cache at {}: {}\n", missing,
               specs.size() - static_cast<size_t>(result.failed), kc.store().disk().dir(), why);
  }
  return result.failed || missing ? 1 : 0;
}

}  // namespace moejit::tools
