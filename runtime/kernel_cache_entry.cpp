// The KernelSpec side of the cache: key inputs, and BuildArtifacts <-> entry.
#include <nlohmann/json.hpp>
#include <stdexcept>

#include "codegen/compiler_identity.hpp"
#include "ptx_passes/pipeline_version.hpp"
#include "runtime/kernel_cache.hpp"
#include "templates/registry.hpp"

namespace moejit::runtime {

cache::KeyInputs key_inputs(const codegen::KernelSpec& spec) {
  cache::KeyInputs in;
  in.identity_json = nlohmann::json(codegen::compiler_identity(spec.target)).dump();
  in.spec_json = nlohmann::json(spec).dump();
  for (const templates::TemplateFile* f : templates::closure(spec.template_file))
    in.templates.emplace_back(std::string(f->name), std::string(f->bytes));
  in.pass_pipeline_version = ptx::k_pass_pipeline_version;
  return in;
}

std::string cache_key(const codegen::KernelSpec& spec) {
  return cache::compute_key(key_inputs(spec));
}

cache::Entry to_entry(const BuildArtifacts& built) {
  cache::Entry e;
  e.files = {
      {std::string(k_file_source), built.source.text},
      {std::string(k_file_ptx), built.ptx},
      {std::string(k_file_final_ptx), built.final_ptx},
      {std::string(k_file_cubin), std::string(built.cubin.begin(), built.cubin.end())},
  };
  e.meta = {
      {"summary", built.spec.summary()},
      {"entry", built.spec.entry_name()},
      {"spec", built.spec},
      {"identity", codegen::compiler_identity(built.spec.target)},
      {"pass_pipeline_version", ptx::k_pass_pipeline_version},
      {"resources", built.resources},
      {"compile_millis", {{"nvrtc", built.nvrtc_millis}, {"passes", built.passes_millis}, {"link", built.link_millis}}},
      {"nvrtc_log", built.nvrtc_log},
      {"link_log", built.link_log}};
  return e;
}

CachedKernel from_entry(const std::string& key, const cache::Entry& entry) {
  auto file = [&](std::string_view name) -> const std::string& {
    const cache::EntryFile* f = entry.file(name);
    if (!f) throw std::runtime_error("kernel cache entry " + key + " has no " + std::string(name));
    return f->bytes;
  };
  CachedKernel k;
  k.key = key;
  k.source = file(k_file_source);
  k.ptx = file(k_file_ptx);
  k.final_ptx = file(k_file_final_ptx);
  const std::string& cubin = file(k_file_cubin);
  k.cubin.assign(cubin.begin(), cubin.end());
  try {
    k.spec = entry.meta.at("spec").get<codegen::KernelSpec>();
    k.resources = entry.meta.at("resources").get<codegen::ResourceReport>();
    const nlohmann::json& t = entry.meta.at("compile_millis");
    k.nvrtc_millis = t.at("nvrtc").get<double>();
    k.passes_millis = t.at("passes").get<double>();
    k.link_millis = t.at("link").get<double>();
  } catch (const std::exception& e) {
    throw std::runtime_error("kernel cache entry " + key + " has a malformed meta.json: " + e.what());
  }
  k.meta = entry.meta;
  return k;
}

size_t KernelSpecHash::operator()(const codegen::KernelSpec& s) const noexcept {
  // The family, target and constants already tell specs apart (the builders
  // derive the rest from them); equality still compares every field, so this
  // only decides buckets, and hashing the long parameter lists would double a hit's cost.
  size_t h = std::hash<std::string>{}(s.kernel);
  auto mix = [&h](size_t v) { h ^= v + 0x9e3779b97f4a7c15ull + (h << 6) + (h >> 2); };
  mix(static_cast<size_t>(s.target.arch));
  for (const auto& [name, value] : s.constants) mix(std::hash<std::int64_t>{}(value));
  mix(static_cast<size_t>(s.threads));
  mix(static_cast<size_t>(s.min_blocks_per_sm));
  return h;
}

}  // namespace moejit::runtime
