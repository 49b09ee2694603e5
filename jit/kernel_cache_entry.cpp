// The KernelSpec side of the cache: key inputs, BuildArtifacts <-> entry, and
// what a kernel entry must be for a load to count as a hit.
#include <algorithm>
#include <iterator>
#include <nlohmann/json.hpp>
#include <stdexcept>

#include "cache/json_diff.hpp"
#include "cache/printable.hpp"
#include "cache/sha256.hpp"
#include "codegen/compiler_identity.hpp"
#include "jit/kernel_cache.hpp"
#include "ptx_passes/pipeline.hpp"
#include "ptx_passes/pipeline_version.hpp"
#include "templates/registry.hpp"

namespace moejit::jit {
namespace {
// What the cubin carries to say which key it was built for (see key_marker_ptx).
constexpr std::string_view k_key_marker = "moejit-cache-key:";
constexpr std::string_view k_kernel_files[] = {k_file_source, k_file_ptx, k_file_final_ptx, k_file_cubin};

std::string templates_digest(const codegen::KernelSpec& spec) {
  cache::Sha256 h;
  for (const templates::TemplateFile* f : templates::closure(spec.template_file)) {
    h.field(f->name);
    h.field(f->bytes);
  }
  return h.hex();
}

// Converting a floating-point number outside int's range to int is undefined,
// and KernelSpec and ResourceReport read theirs with get<int>(): refuse any
// non-integer number except the one timing field.
std::string non_integer_number(const nlohmann::json& value, const std::string& where) {
  std::vector<std::pair<const nlohmann::json*, std::string>> todo = {{&value, where}};
  while (!todo.empty()) {
    const auto [v, path] = todo.back();
    todo.pop_back();
    const std::string_view timing = ".ptxas_millis";
    const bool is_timing =
        path.size() >= timing.size() && path.compare(path.size() - timing.size(), timing.size(), timing) == 0;
    if (v->is_number_float() && !is_timing)
      return "meta.json: " + path + " is " + cache::json_excerpt(*v) + "; it must be an integer";
    if (v->is_object())
      for (const auto& [k, child] : v->items()) todo.emplace_back(&child, path + "." + cache::printable(k, 32));
    else if (v->is_array())
      for (size_t i = 0; i < v->size(); ++i) todo.emplace_back(&(*v)[i], path + "[" + std::to_string(i) + "]");
  }
  return {};
}

// The fields of meta.json a kernel needs, into `k`. Throws std::runtime_error
// ("meta.json: spec: ...") when one is missing or malformed.
void read_meta(const nlohmann::json& meta, CachedKernel& k) {
  auto field = [&](const char* name) -> const nlohmann::json& {
    const auto it = meta.find(name);
    if (it == meta.end()) throw std::runtime_error(std::string("meta.json has no ") + name);
    return *it;
  };
  for (const char* name : {"spec", "resources"})
    if (std::string why = non_integer_number(field(name), name); !why.empty()) throw std::runtime_error(why);
  const char* reading = "spec";
  try {
    k.spec = field("spec").get<codegen::KernelSpec>();
    reading = "resources";
    k.resources = field("resources").get<codegen::ResourceReport>();
    reading = "compile_millis";
    const nlohmann::json& t = field("compile_millis");
    k.nvrtc_millis = t.at("nvrtc").get<double>();
    k.passes_millis = t.at("passes").get<double>();
    k.link_millis = t.at("link").get<double>();
  } catch (const std::exception& e) {
    throw std::runtime_error(std::string("meta.json: ") + reading + ": " + cache::printable(e.what(), 200));
  }
}

// Why an entry that keys as `local` here, not as `key`, is stale: the first
// input of the key its meta.json records differently from this moejit, or
// "" when it records the same inputs (then the spec itself was changed).
std::string built_elsewhere(const nlohmann::json& meta, const codegen::KernelSpec& spec) {
  auto recorded = [&](const char* name) {
    const auto it = meta.find(name);
    return it == meta.end() ? nlohmann::json() : *it;
  };
  if (recorded("key_schema") != cache::k_key_schema_version)
    return "built by another moejit (key schema " + cache::json_excerpt(recorded("key_schema")) + "; this one uses " +
           std::to_string(cache::k_key_schema_version) + ")";
  if (auto d = cache::first_difference(recorded("identity"), nlohmann::json(codegen::compiler_identity(spec.target))))
    return "built by another toolkit (compiler identity field '" + cache::printable(d->path) + "' is " + d->left +
           " there, " + d->right + " here)";
  if (recorded("pass_pipeline_version") != ptx::k_pass_pipeline_version)
    return "built by another moejit (PTX pass pipeline " + cache::json_excerpt(recorded("pass_pipeline_version")) +
           "; this one runs " + std::to_string(ptx::k_pass_pipeline_version) + ")";
  if (recorded("templates_sha256") != templates_digest(spec))
    return "built by another moejit (its kernel templates differ from this one's)";
  return {};
}
}  // namespace

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
      {"key_schema", cache::k_key_schema_version},
      {"templates_sha256", templates_digest(built.spec)},
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
    read_meta(entry.meta, k);
  } catch (const std::exception& e) {
    throw std::runtime_error("kernel cache entry " + key + " is malformed: " + e.what());
  }
  k.meta = entry.meta;
  return k;
}

std::string key_marker_ptx(std::string_view key) {
  const std::string marker = std::string(k_key_marker) + std::string(key);
  std::string bytes;
  for (char c : marker) {
    if (!bytes.empty()) bytes += ',';
    bytes += std::to_string(static_cast<unsigned char>(c));
  }
  return "\n// The cache key this kernel was built for: the cubin carries it, so a cubin\n"
         "// under another key's name is detected (runtime/kernel_cache_entry.cpp).\n"
         ".visible .global .align 1 .b8 moejit_cache_key[" +
         std::to_string(marker.size()) + "] = {" + bytes + "};\n";
}

BuildArtifacts build_for_cache(const codegen::KernelSpec& spec, std::string_view key) {
  BuildArtifacts a = compile_source(spec);
  run_passes(a, ptx_buffer_name(spec), pass_options(spec));
  a.final_ptx += key_marker_ptx(key);
  link(a, ptx_buffer_name(spec));
  return a;
}

namespace {
cache::EntryVerdict check_kernel_entry_or_throw(std::string_view key, const cache::Entry& entry) {
  auto bad = [](std::string why) { return cache::EntryVerdict{std::move(why), false}; };
  std::string names;
  bool four = entry.files.size() == std::size(k_kernel_files);
  for (const cache::EntryFile& f : entry.files) {
    if (!names.empty()) names += ", ";
    names += cache::printable(f.name, 32);
    four = four && std::find(std::begin(k_kernel_files), std::end(k_kernel_files), f.name) != std::end(k_kernel_files);
  }
  if (!four)
    return bad("it holds {" + names +
               "}, not the files of a kernel (source.cu, ptx.nvrtc.ptx, ptx.final.ptx, "
               "kernel.cubin)");
  CachedKernel k;
  try {
    read_meta(entry.meta, k);
  } catch (const std::exception& e) {
    return bad(e.what());
  }
  // The key binds the contents: the spec must key to the folder's name here,
  // and the files must be what that spec builds to.
  if (const std::string local = cache_key(k.spec); local != key) {
    if (std::string why = built_elsewhere(entry.meta, k.spec); !why.empty()) return {std::move(why), true};
    return bad("meta.json's spec keys as " + local.substr(0, 16) + " here, not as its folder's name");
  }
  if (!built_elsewhere(entry.meta, k.spec).empty())
    return bad("meta.json records key inputs (identity, templates, passes) that do not match its key");
  if (entry.file(k_file_source)->bytes != codegen::emit_source(k.spec).text)
    return bad("source.cu is not the source this moejit emits for the spec");
  // The passes are this moejit's own and take milliseconds: re-running them
  // binds ptx.nvrtc.ptx to ptx.final.ptx, which must end with the key.
  std::vector<ptx::PassStage> stages;
  const std::string& nvrtc_ptx = entry.file(k_file_ptx)->bytes;
  ptx::run_pipeline(nvrtc_ptx, ptx_buffer_name(k.spec), pass_options(k.spec), stages);
  if (entry.file(k_file_final_ptx)->bytes != (stages.empty() ? nvrtc_ptx : stages.back().ptx) + key_marker_ptx(key))
    return bad("ptx.final.ptx is not what the PTX passes make of ptx.nvrtc.ptx, followed by the key");
  const std::string& cubin = entry.file(k_file_cubin)->bytes;
  if (cubin.compare(0, 4,
                    "\x7f"
                    "ELF") != 0)
    return bad("kernel.cubin is not an ELF file");
  const std::string own = std::string(k_key_marker) + std::string(key);
  bool carries_own = false;
  for (size_t at = cubin.find(k_key_marker); at != std::string::npos; at = cubin.find(k_key_marker, at + 1)) {
    if (cubin.compare(at, own.size(), own) != 0)
      return bad("kernel.cubin was built for key " +
                 cache::printable(std::string_view(cubin).substr(at + k_key_marker.size(), 16)) +
                 ", not this one (a cubin under another key's name)");
    carries_own = true;
  }
  if (!carries_own) return bad("kernel.cubin carries no key (it was not built for this entry)");
  return {};
}
}  // namespace

codegen::KernelSpec read_meta_spec(const nlohmann::json& meta) {
  const auto it = meta.find("spec");
  if (it == meta.end()) throw std::runtime_error("meta.json has no spec");
  if (std::string why = non_integer_number(*it, "spec"); !why.empty()) throw std::runtime_error(why);
  try {
    return it->get<codegen::KernelSpec>();
  } catch (const std::exception& e) {
    throw std::runtime_error("meta.json: spec: " + cache::printable(e.what(), 200));
  }
}

cache::EntryVerdict check_kernel_entry(std::string_view key, const cache::Entry& entry) {
  try {
    return check_kernel_entry_or_throw(key, entry);
  } catch (const std::exception& e) {
    // A spec naming an unknown template, say: whatever it is, the entry is unusable.
    return {cache::printable(e.what(), 300), false};
  }
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

}  // namespace moejit::jit
