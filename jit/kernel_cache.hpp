#pragma once
// Kernels through the cache: memory -> disk -> build_kernel() -> publish.
//
// get_or_build(spec) is what every caller that needs a cubin uses. A kernel
// seen before in this process costs one hash-map lookup keyed by the spec
// itself; the first request computes the SHA-256 key (cache/key.hpp) from
// the spec, the compiler identity, the template bytes and the pass-pipeline
// version, and goes to the disk cache, which builds and publishes on a miss.
// Loading into the GPU (LoadedKernel) is the caller's, and separate.

#include <memory>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "cache/cache.hpp"
#include "cache/key.hpp"
#include "cache/memory_store.hpp"
#include "codegen/kernel_spec.hpp"
#include "codegen/resource_report.hpp"
#include "jit/kernel_builder.hpp"

namespace moejit::jit {

// The files of a kernel's cache entry.
inline constexpr std::string_view k_file_source = "source.cu";
inline constexpr std::string_view k_file_ptx = "ptx.nvrtc.ptx";
inline constexpr std::string_view k_file_final_ptx = "ptx.final.ptx";
inline constexpr std::string_view k_file_cubin = "kernel.cubin";

struct CachedKernel {
  std::string key;
  codegen::KernelSpec spec;
  std::vector<char> cubin;
  std::string source;     // the emitted CUDA C++
  std::string ptx;        // as NVRTC emitted it
  std::string final_ptx;  // after the PTX passes
  codegen::ResourceReport resources;
  double nvrtc_millis = 0, passes_millis = 0, link_millis = 0;  // of the build that made it
  nlohmann::json meta;                                          // the entry's meta.json
};

// What decides the key of `spec`, and the key itself.
cache::KeyInputs key_inputs(const codegen::KernelSpec& spec);
std::string cache_key(const codegen::KernelSpec& spec);

// A build as a cache entry (files + meta: spec, identity, key schema,
// templates digest, resources, times, logs), and back.
cache::Entry to_entry(const BuildArtifacts& built);
// Throws std::runtime_error naming the key if the entry lacks one of the files
// or a field of meta.json.
CachedKernel from_entry(const std::string& key, const cache::Entry& entry);

// The PTX declaration that makes a cubin carry `key`: a global byte array
// "moejit-cache-key:<key>" appended to the final PTX before nvJitLink.
std::string key_marker_ptx(std::string_view key);
// build_kernel() for the cache: the same stages, with the key marker linked in.
BuildArtifacts build_for_cache(const codegen::KernelSpec& spec, std::string_view key);

// What get_or_build (and `moejit cache verify` and `import`) require of an
// entry whose checksums pass, so that a hit can always be loaded and belongs
// to its key:
// - exactly the four kernel files, and a meta.json whose spec, resources and
//   compile times parse (numbers where numbers belong);
// - the spec keys to the entry's name with this moejit and toolkit, else the
//   entry is stale when meta.json records other key inputs (another toolkit,
//   templates, pass pipeline), or corrupt when it records these;
// - source.cu is what this moejit emits for the spec, ptx.final.ptx is what
//   the PTX passes make of ptx.nvrtc.ptx followed by the key, and
//   kernel.cubin carries the key (and no other).
// Checksums stop damage; this stops a file or meta.json moved between keys.
// Neither stops someone who can write the cache (README.md, "Trust model").
// Not re-checked, as that would take a compile: that ptx.nvrtc.ptx is
// NVRTC's output for source.cu, and kernel.cubin nvJitLink's for the PTX.
cache::EntryVerdict check_kernel_entry(std::string_view key, const cache::Entry& entry);
// meta.json's spec, read as check_kernel_entry reads it (a non-integer number refused first: converting one
// outside int's range is undefined). Throws std::runtime_error naming the field.
codegen::KernelSpec read_meta_spec(const nlohmann::json& meta);

struct KernelSpecHash {
  size_t operator()(const codegen::KernelSpec& spec) const noexcept;
};

class KernelCache {
 public:
  explicit KernelCache(cache::Config config);

  // The process-wide cache, configured on first use from configure_global()'s
  // config if one was given, else from the environment.
  static KernelCache& global();
  // Throws std::logic_error once global() has been called.
  static void configure_global(cache::Config config);

  // Throws cache::StrictMissError (MOEJIT_NO_JIT=1) or the build's error.
  std::shared_ptr<const CachedKernel> get_or_build(const codegen::KernelSpec& spec, cache::Source* source = nullptr);

  cache::CounterSnapshot counters() const { return cache_.counters().snapshot(); }
  cache::Cache& store() { return cache_; }
  const cache::Config& config() const { return cache_.config(); }

 private:
  mutable cache::Cache cache_;
  cache::MemoryStore<codegen::KernelSpec, std::shared_ptr<const CachedKernel>, KernelSpecHash> memory_;
};

}  // namespace moejit::jit
