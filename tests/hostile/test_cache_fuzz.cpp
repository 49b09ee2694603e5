// Acceptance 2 of issue 15: random mutations of a valid kernel entry's
// meta.json and files, and of a valid bundle (its header, manifest, payload),
// including type changes, deep nesting, repeated keys, huge numbers and
// control bytes, with and without the checksums resealed to match. Every
// case must end in a verdict, within a bounded time, with a short printable
// message; a load or import that succeeds must hold the genuine kernel; and
// the cache must be usable afterwards (verify, then precompile, succeed).
//
// MOEJIT_FUZZ_CASES sets the number of cases (default 10000), MOEJIT_TEST_SEED
// the seed (default: from the clock; the test prints it).
#include <doctest/doctest.h>

#include <chrono>
#include <cstdlib>
#include <nlohmann/json.hpp>
#include <random>

#include "cache/bundle.hpp"
#include "cache/disk_store.hpp"
#include "cache/printable.hpp"
#include "codegen/smoke_kernel.hpp"
#include "hostile_util.hpp"
#include "jit/kernel_cache.hpp"

using namespace moejit;
using moejit::test::TempDir;

namespace {
using Rng = std::mt19937_64;
using Clock = std::chrono::steady_clock;

constexpr std::string_view k_deep = "@@DEEP@@";  // replaced by deep nesting in the text

size_t below(Rng& rng, size_t n) {
  return n ? static_cast<size_t>(rng() % n) : 0;
}

// Bytes for the text of a file: any byte, JSON's own characters often.
std::string random_bytes(Rng& rng, size_t n) {
  static const std::string interesting = "{}[]\",:\\\x1b\x07\n\0 0123456789eE+-.tfnu";
  std::string s;
  for (size_t i = 0; i < n; ++i)
    s += below(rng, 2) ? static_cast<char>(rng()) : interesting[below(rng, interesting.size())];
  return s;
}

// Characters for a JSON string value or key: ASCII, control bytes included
// (nlohmann can only write valid UTF-8; the text mutations cover the rest).
std::string random_ascii(Rng& rng, size_t n) {
  std::string s = random_bytes(rng, n);
  for (char& c : s) c = static_cast<char>(c & 0x7f);
  return s;
}

// A value of a random type, many of them at an edge.
nlohmann::json hostile_value(Rng& rng, int depth = 0) {
  switch (below(rng, 16)) {
    case 0: return "";
    case 1: return random_ascii(rng, 1 + below(rng, 40));
    case 2: return std::string(below(rng, 200000), 'x');
    case 3: return 0;
    case 4: return -1;
    case 5: return std::numeric_limits<std::int64_t>::min();
    case 6: return std::numeric_limits<std::uint64_t>::max();
    case 7: return 1e300;
    case 8: return 0.5;
    case 9: return true;
    case 10: return nullptr;
    case 11: {
      nlohmann::json a = nlohmann::json::array();
      if (depth < 2)
        for (size_t i = below(rng, 4); i > 0; --i) a.push_back(hostile_value(rng, depth + 1));
      return a;
    }
    case 12: return nlohmann::json{{"size", below(rng, 2) ? nlohmann::json(1) : hostile_value(rng, depth + 1)}};
    case 13: return std::string(64, "0af"[below(rng, 3)]);
    default: return std::string(k_deep);
  }
}

// A random node of `root` (the root itself included), with its parent.
std::pair<nlohmann::json*, nlohmann::json*> random_node(nlohmann::json& root, Rng& rng) {
  nlohmann::json *node = &root, *parent = nullptr;
  while (node->is_structured() && !node->empty() && below(rng, 10) < 7) {
    parent = node;
    auto it = node->begin();
    std::advance(it, static_cast<std::ptrdiff_t>(below(rng, node->size())));
    node = &*it;
  }
  return {node, parent};
}

// One structural change: replace, delete or add a field somewhere in `root`.
void mutate_structure(nlohmann::json& root, Rng& rng) {
  auto [node, parent] = random_node(root, rng);
  switch (below(rng, 4)) {
    case 0:
      if (parent && parent->is_object()) {
        for (auto it = parent->begin(); it != parent->end(); ++it)
          if (&*it == node) {
            parent->erase(it);
            return;
          }
      }
      [[fallthrough]];
    case 1:
      if (node->is_object()) {
        (*node)[random_ascii(rng, 1 + below(rng, 8))] = hostile_value(rng);
        return;
      }
      [[fallthrough]];
    default: *node = hostile_value(rng);
  }
}

// The text of `j`, with the deep placeholder (if any) made deep.
std::string render(const nlohmann::json& j, Rng& rng) {
  std::string text = j.dump();
  const std::string placeholder = "\"" + std::string(k_deep) + "\"";
  for (size_t at = text.find(placeholder); at != std::string::npos; at = text.find(placeholder, at)) {
    const size_t depths[] = {15, 17, 19, 20, 64, 1000, 100000};
    const std::string deep = test::deep_array(depths[below(rng, std::size(depths))]);
    text.replace(at, placeholder.size(), deep);
    at += deep.size();
  }
  return text;
}

// Byte-level damage: flips, a cut, an insertion, a repeated key.
void mutate_bytes(std::string& text, Rng& rng) {
  if (text.empty()) text = "{";
  switch (below(rng, 5)) {
    case 0:
      for (size_t i = 1 + below(rng, 8); i > 0; --i)
        text[below(rng, text.size())] ^= static_cast<char>(1 << below(rng, 8));
      return;
    case 1: text.resize(below(rng, text.size())); return;
    case 2: text.insert(below(rng, text.size() + 1), random_bytes(rng, 1 + below(rng, 64))); return;
    case 3: {
      const size_t brace = text.find('{');
      if (brace != std::string::npos) text.insert(brace + 1, "\"format\":2,\"key\":\"x\",");
      return;
    }
    default: text.insert(below(rng, text.size() + 1), test::deep_array(1 + below(rng, 50000)));
  }
}

bool printable_short(const std::string& message) {
  if (message.size() > 2000) return false;
  for (char c : message)
    if (static_cast<unsigned char>(c) < 0x20 || c == 0x7f) return false;
  return true;
}

struct Original {
  std::string key;
  cache::Entry entry;  // files and sealed meta as published
  std::string meta_text;
};

void write_entry(const std::string& folder, const Original& o) {
  std::filesystem::remove_all(folder);
  std::filesystem::create_directories(folder);
  for (const cache::EntryFile& f : o.entry.files) test::write_text(folder + "/" + f.name, f.bytes);
  test::write_text(folder + "/meta.json", o.meta_text);
}

// The first file that `a` holds differently from `b` ("" when none).
std::string differing_file(const cache::Entry& a, const cache::Entry& b) {
  if (a.files.size() != b.files.size()) return "(the file set)";
  for (const cache::EntryFile& f : a.files)
    if (!b.file(f.name) || b.file(f.name)->bytes != f.bytes) return f.name;
  return {};
}

struct Tally {
  int cases = 0, hits = 0, corrupt = 0, stale = 0, absent = 0, bundles_read = 0, bundles_refused = 0, imported = 0;
  double slowest = 0;
};
}  // namespace

TEST_CASE("fuzz: mutated meta.json, entry files and bundles: no crash, no hang, the cache usable after") {
  const char* cases_env = std::getenv("MOEJIT_FUZZ_CASES");
  const int cases = cases_env ? std::atoi(cases_env) : 10000;
  const char* seed_env = std::getenv("MOEJIT_TEST_SEED");
  const std::uint64_t seed = seed_env ? std::strtoull(seed_env, nullptr, 10)
                                      : static_cast<std::uint64_t>(Clock::now().time_since_epoch().count());
  MESSAGE("fuzz: " << cases << " cases, MOEJIT_TEST_SEED=" << seed);
  Rng rng(seed);

  TempDir scratch;
  const std::string root = scratch / "cache";
  std::vector<std::string> warnings;
  std::vector<Original> originals;
  {
    jit::KernelCache kc(test::quiet_config(root, &warnings));
    for (codegen::Arch arch : {codegen::Arch::sm_90a, codegen::Arch::sm_120a}) {
      const codegen::KernelSpec spec = codegen::smoke_kernel_spec(codegen::Target{arch});
      kc.get_or_build(spec);
      Original o;
      o.key = jit::cache_key(spec);
      o.entry = test::entry_in(root + "/v1/" + o.key);
      o.meta_text = test::read_text(root + "/v1/" + o.key + "/meta.json");
      originals.push_back(std::move(o));
    }
  }
  const Original& victim = originals[0];
  const std::string folder = root + "/v1/" + victim.key, bundle = scratch / "fuzz.moejit";
  cache::write_bundle(bundle, {{originals[0].key, originals[0].entry}, {originals[1].key, originals[1].entry}});
  const std::string bundle_bytes = test::read_text(bundle);
  const test::BundleParts parts = test::split_bundle(bundle_bytes);
  const nlohmann::json manifest = nlohmann::json::parse(parts.manifest);

  cache::DiskStore disk(root, jit::check_kernel_entry);
  Tally t;
  bool files_dirty = false;
  for (int i = 0; i < cases; ++i) {
    const auto t0 = Clock::now();
    if (below(rng, 10) < 6) {
      // meta.json (and sometimes a file) of an entry.
      if (files_dirty) write_entry(folder, victim), files_dirty = false;
      nlohmann::json meta = victim.entry.meta;
      std::string text;
      const size_t kind = below(rng, 10);
      if (kind < 5) {
        for (size_t n = 1 + below(rng, 3); n > 0; --n) mutate_structure(meta, rng);
        if (below(rng, 2) && meta.is_object()) meta["meta_sha256"] = cache::meta_checksum(meta);  // resealed
        text = render(meta, rng);
      } else if (kind < 8) {
        text = victim.meta_text;
        mutate_bytes(text, rng);
      } else {
        // A file changed, and every checksum resealed to match.
        files_dirty = true;
        test::write_text(folder + "/meta.json", victim.meta_text);
        const std::string pick = victim.entry.files[below(rng, victim.entry.files.size())].name;
        const std::string path = folder + "/" + pick;
        switch (below(rng, 4)) {
          case 0: test::write_text(path, originals[1].entry.file(pick)->bytes); break;  // the other key's file
          case 1: test::write_text(path, test::read_text(path).substr(0, below(rng, 1000))); break;
          case 2: std::filesystem::remove(path); break;
          default: test::write_text(folder + "/extra.bin", random_bytes(rng, 100)); break;
        }
        test::reseal(folder, [](nlohmann::json&) {});
        text = test::read_text(folder + "/meta.json");
      }
      test::write_text(folder + "/meta.json", text);
      const cache::Loaded l = disk.load(victim.key);
      ++t.cases;
      switch (l.status) {
        case cache::LoadStatus::hit:
          ++t.hits;
          CHECK(differing_file(l.entry, victim.entry) == "");  // a hit is always the genuine kernel
          break;
        case cache::LoadStatus::corrupt: ++t.corrupt; break;
        case cache::LoadStatus::stale: ++t.stale; break;
        case cache::LoadStatus::absent: ++t.absent; break;
      }
      if (!printable_short(l.problem))
        FAIL_CHECK("case " << i << ": an unbounded or unprintable message: " << cache::printable(l.problem, 300));
      if (i % 64 == 0) CHECK(disk.list().size() >= 1);
    } else {
      // A bundle: its manifest (with a fresh header, so the mutation is read), header or bytes.
      std::string bytes;
      const size_t kind = below(rng, 10);
      if (kind < 5) {
        nlohmann::json m = manifest;
        for (size_t n = 1 + below(rng, 3); n > 0; --n) {
          // Mostly inside an entry's meta.json, the part a bundle carries for the store.
          nlohmann::json* at = &m;
          if (below(rng, 4) && m.is_object() && m.contains("entries") && m["entries"].is_array() &&
              m["entries"].size() == 2) {
            nlohmann::json& e = m["entries"][below(rng, 2)];
            if (e.is_object() && e.contains("meta")) at = &e["meta"];
          }
          mutate_structure(*at, rng);
        }
        if (below(rng, 2) && m.is_object() && m.contains("entries") && m["entries"].is_array())
          for (auto& e : m["entries"])
            if (e.is_object() && e.contains("meta") && e["meta"].is_object())
              e["meta"]["meta_sha256"] = cache::meta_checksum(e["meta"]);
        test::BundleParts p = parts;
        p.manifest = render(m, rng);
        bytes = test::rebundle(p);
      } else if (kind < 7) {
        test::BundleParts p = parts;
        const std::string sizes[] = {"0",
                                     "1",
                                     "4294967296",
                                     "18446744073709551615",
                                     "99999999999999999999999",
                                     std::to_string(p.manifest.size() + 1),
                                     "-1",
                                     ""};
        bytes = p.magic + sizes[below(rng, std::size(sizes))] + " " + cache::sha256_hex(p.manifest) + "\n" +
                p.manifest + p.payload;
        if (below(rng, 2)) mutate_bytes(bytes, rng);
      } else {
        bytes = bundle_bytes;
        mutate_bytes(bytes, rng);
      }
      test::write_text(bundle, bytes);
      ++t.cases;
      try {
        const std::vector<cache::BundleEntry> entries = cache::read_bundle(bundle);
        ++t.bundles_read;
        for (const cache::BundleEntry& e : entries) {
          const cache::EntryVerdict v = jit::check_kernel_entry(e.key, e.entry);
          if (!printable_short(v.problem))
            FAIL_CHECK("case " << i << ": an unbounded or unprintable verdict: " << cache::printable(v.problem, 300));
          if (!v.problem.empty()) continue;
          // What import would do: only the genuine kernels get this far.
          const Original& o = e.key == originals[0].key ? originals[0] : originals[1];
          CHECK(e.key == o.key);
          CHECK(differing_file(e.entry, o.entry) == "");
          std::string error;
          CHECK(disk.publish(e.key, e.entry, &error) != cache::PublishStatus::failed);
          ++t.imported;
        }
      } catch (const cache::BundleError& e) {
        ++t.bundles_refused;
        if (!printable_short(e.what()))
          FAIL_CHECK("case " << i << ": an unbounded or unprintable error: " << cache::printable(e.what(), 300));
      }
    }
    t.slowest = std::max(t.slowest, std::chrono::duration<double>(Clock::now() - t0).count());
  }
  MESSAGE("entries: " << t.hits << " hits, " << t.corrupt << " corrupt, " << t.stale << " stale, " << t.absent
                      << " absent; bundles: " << t.bundles_read << " read, " << t.bundles_refused << " refused, "
                      << t.imported << " entries importable; slowest case " << t.slowest << " s");
  CHECK(t.cases == cases);
  CHECK(t.slowest < 10);  // a hang would be killed by ctest's timeout; a slow case is a failure too

  // The cache is still usable: verify --remove clears the damage it finds,
  // verify then passes, and precompile fills it again.
  const test::CliResult clean = test::moejit(scratch, root, {"cache", "verify", "--remove"});
  INFO(clean.output);
  CHECK((clean.exit_code == 0 || clean.exit_code == 1));
  const test::CliResult verify = test::moejit(scratch, root, {"cache", "verify"});
  INFO(verify.output);
  CHECK(verify.exit_code == 0);
  const test::CliResult precompile = test::moejit(scratch, root, {"precompile", "--targets", "sm_90a,sm_120a"});
  INFO(precompile.output);
  CHECK(precompile.exit_code == 0);
  const test::CliResult after = test::moejit(scratch, root, {"cache", "verify"});
  CHECK(after.exit_code == 0);
  CHECK(test::contains(after.output, "verified 2 entries: 2 ok, 0 bad"));
}
