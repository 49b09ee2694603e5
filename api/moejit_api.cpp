// The exported free functions of the public API: configs, plans, precompile
// and process settings. Each maps the public types (convert.hpp) and calls
// the library; every exception leaves as moejit::Error.
#include <fmt/format.h>

#include <algorithm>

#include <nlohmann/json.hpp>

#include "api/convert.hpp"
#include "cache/config.hpp"
#include "codegen/device_profile.hpp"
#include "jit/kernel_cache.hpp"
#include "jit/precompile.hpp"
#include "runtime/moe_layer.hpp"
#include "runtime/weight_packing.hpp"

#ifndef MOEJIT_VERSION
#error "MOEJIT_VERSION must be defined by the build"
#endif

namespace moejit {

const char* version() {
  return MOEJIT_VERSION;
}

Error::Error(std::string field, const std::string& message) : std::runtime_error(message), field_(std::move(field)) {}
Error::~Error() = default;

std::vector<std::string> builtin_models() {
  return codegen::builtin_model_names();
}

Config builtin_config(std::string_view model) {
  return api::guarded([&] {
    const std::vector<std::string> names = codegen::builtin_model_names();
    if (std::find(names.begin(), names.end(), model) == names.end())
      throw Error("model",
                  fmt::format("model = '{}' is not a built-in model: one of {}", model, fmt::join(names, ", ")));
    return api::to_public(codegen::builtin_model(model));
  });
}

Config config_from_json(std::string_view json) {
  return api::guarded([&] { return api::to_public(codegen::parse_moe_config(json)); });
}

Config config_from_file(const std::string& path) {
  return api::guarded([&] { return api::to_public(codegen::load_moe_config(path)); });
}

std::string to_json(const Config& config) {
  return api::guarded([&] { return nlohmann::json(api::to_internal(config)).dump(2); });
}

void validate(const Config& config) {
  api::guarded([&] { runtime::validate_layer_config(api::to_internal(config)); });
}

std::vector<std::string> builtin_devices() {
  return codegen::builtin_profile_names();
}

Plan plan(const Config& config, int batch, std::string_view device, const LayerOptions& options) {
  return api::guarded([&] {
    const std::vector<std::string> names = codegen::builtin_profile_names();
    if (std::find(names.begin(), names.end(), device) == names.end())
      throw Error("device", fmt::format("device = '{}' is not a built-in device profile: one of {}", device,
                                        fmt::join(names, ", ")));
    const codegen::MoeConfig internal = api::to_internal(config);
    runtime::validate_layer_config(internal);
    codegen::validate_batch(internal, batch);
    codegen::MoeLaunchPlan p =
        codegen::plan_launch(internal, batch, codegen::builtin_profile(device), api::codegen_options(options));
    codegen::override_pdl(p, options.pdl);
    return api::to_public(p);
  });
}

PackedWeights pack_weights(const Config& config, const CheckpointWeightsHost& w, const LayerOptions& options,
                           std::string_view target) {
  return api::guarded([&] {
    const codegen::MoeConfig internal = api::to_internal(config);
    runtime::validate_layer_config(internal);
    const auto t = codegen::parse_target(target);
    if (!t) throw Error("target", fmt::format("target = '{}' is not one of {}", target, codegen::target_names()));
    const codegen::ComputePath path =
        codegen::resolve_path(api::codegen_options(options).path, t->arch, internal.recipe);
    const codegen::AtomTraits* atom = codegen::find_atom(*t, path, internal.recipe);
    if (!atom)
      throw Error("path", fmt::format("path = {} is not available on {}", codegen::path_name(path), t->name()));
    runtime::PackedWeightsHost p = runtime::pack_weights(internal, *atom, api::to_internal(w));
    return PackedWeights{std::move(p.w1), std::move(p.w2), p.top_scale_code, std::move(p.atom),
                         p.subnormal_weight_scales};
  });
}

std::int64_t workspace_bytes(const Config& config, const LayerOptions& options, std::string_view device) {
  return plan(config, 1, device, options).workspace_bytes;
}

PrecompileReport precompile(const Config& config, const std::vector<int>& batches,
                            const std::vector<std::string>& targets, const LayerOptions& options, int jobs,
                            const PrecompileProgress& progress) {
  return api::guarded([&] {
    jit::PrecompileRequest request;
    request.config = api::to_internal(config);
    runtime::validate_layer_config(*request.config);
    if (batches.empty()) throw Error("batches", "batches is empty: name at least one batch size");
    request.batches = batches;  // each size once: a long list with repeats plans each shape once
    std::sort(request.batches.begin(), request.batches.end());
    request.batches.erase(std::unique(request.batches.begin(), request.batches.end()), request.batches.end());
    if (targets.empty()) throw Error("targets", "targets is empty: name at least one, e.g. sm_90a");
    for (const std::string& name : targets) {
      const auto target = codegen::parse_target(name);
      if (!target) throw Error("targets", fmt::format("targets: '{}' is not one of {}", name, codegen::target_names()));
      request.targets.push_back(*target);
    }
    request.options = api::codegen_options(options);
    const std::vector<codegen::KernelSpec> specs = jit::kernels_to_precompile(request);

    // Compiling is what was asked: a cache in strict mode (no_jit) still builds here.
    cache::Config cache_config = jit::KernelCache::global().config();
    cache_config.no_jit = false;
    jit::KernelCache cache(cache_config);
    const int total = static_cast<int>(specs.size());
    int done = 0;
    jit::PrecompileHooks hooks;
    if (progress)
      hooks.finished = [&](const codegen::KernelSpec& spec, jit::PrecompileOutcome, double, const std::string&) {
        progress(++done, total, spec.summary());
      };
    jit::PrecompileResult r = jit::precompile_kernels(cache, specs, jobs, hooks);
    PrecompileReport report;
    report.kernels = total;
    report.compiled = r.compiled;
    report.cached = r.cached;
    report.errors = std::move(r.errors);
    if (const std::size_t missing = jit::kernels_not_kept(cache, specs, r.done))
      report.errors.push_back(fmt::format("{} of {} kernels are not in the kernel cache at '{}'{}", missing, total,
                                          cache.store().disk().dir(),
                                          cache.store().disk_writable() ? "" : ": " + cache.store().disk_problem()));
    return report;
  });
}

void configure(const Settings& settings) {
  api::guarded([&] {
    cache::Config c = cache::Config::from_env({settings.cache_max_bytes.has_value(), settings.no_jit.has_value()});
    if (settings.cache_dir) {
      c.dir = *settings.cache_dir;
      if (c.dir.empty()) c.no_dir_reason = "configure() set no cache directory";
    }
    if (settings.cache_max_bytes) c.max_bytes = *settings.cache_max_bytes;
    if (settings.no_jit) c.no_jit = *settings.no_jit;
    if (settings.log) {
      const LogCallback log = settings.log;
      c.warn = [log](const std::string& message) { log(LogLevel::warning, message); };
      c.info = [log](const std::string& message) { log(LogLevel::info, message); };
    }
    try {
      jit::KernelCache::configure_global(std::move(c));
    } catch (const std::logic_error& e) {
      throw Error("settings", e.what());
    }
  });
}

}  // namespace moejit
