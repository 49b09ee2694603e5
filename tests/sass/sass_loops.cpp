#include "tests/sass/sass_loops.hpp"

#include <array>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <map>
#include <regex>
#include <sstream>
#include <stdexcept>

#include <unistd.h>

namespace moejit::sass {
namespace {

struct Line {
  bool label = false;
  std::string text;  // label name or instruction (predicate stripped)
};

bool starts_with_any(std::string_view op, std::initializer_list<std::string_view> prefixes) {
  for (std::string_view p : prefixes)
    if (op.substr(0, p.size()) == p) return true;
  return false;
}

}  // namespace

std::vector<std::string> instructions(std::string_view sass) {
  static const std::regex instr_re(R"(^\s*/\*[0-9a-f]{4,}\*/\s+(.*?)\s*;)");
  std::vector<std::string> out;
  std::istringstream in{std::string(sass)};
  for (std::string raw; std::getline(in, raw);) {
    std::smatch m;
    if (std::regex_search(raw, m, instr_re)) out.push_back(m[1]);
  }
  return out;
}

std::vector<std::vector<std::size_t>> copy_runs(const std::vector<std::string>& instructions, std::size_t max_gap) {
  std::vector<std::vector<std::size_t>> runs;
  for (std::size_t i = 0; i < instructions.size(); ++i) {
    if (instructions[i].find("LDGSTS.E.BYPASS.128") == std::string::npos) continue;
    if (runs.empty() || i - runs.back().back() > max_gap) runs.emplace_back();
    runs.back().push_back(i);
  }
  return runs;
}

std::vector<LoopMix> mma_loops(std::string_view sass) {
  static const std::regex instr_re(R"(^\s*/\*[0-9a-f]{4,}\*/\s+(.*?)\s*;)");
  static const std::regex label_re(R"(^\s*(\.L_x_\d+):)");
  static const std::regex branch_re(R"(BRA\s+(?:`\()?(\.L_x_\d+))");
  static const std::regex predicate_re(R"(^@!?U?P[T0-9]+\s+)");
  std::vector<Line> lines;
  std::map<std::string, std::size_t> labels;
  std::istringstream in{std::string(sass)};
  for (std::string raw; std::getline(in, raw);) {
    std::smatch m;
    if (std::regex_search(raw, m, label_re)) {
      labels[m[1]] = lines.size();
      lines.push_back({true, m[1]});
    } else if (std::regex_search(raw, m, instr_re)) {
      lines.push_back({false, std::regex_replace(m[1].str(), predicate_re, "")});
    }
  }
  std::vector<LoopMix> loops;
  for (std::size_t i = 0; i < lines.size(); ++i) {
    std::smatch m;
    if (lines[i].label || !std::regex_search(lines[i].text, m, branch_re)) continue;
    const auto target = labels.find(m[1]);
    if (target == labels.end() || target->second >= i) continue;
    LoopMix mix;
    mix.label = m[1];
    bool nested = false;
    for (std::size_t j = target->second + 1; j <= i; ++j) {
      if (lines[j].label) continue;
      const std::string& t = lines[j].text;
      const std::string op = t.substr(0, t.find(' '));
      std::smatch b;
      // A backward branch inside the body to a loop that holds an MMA: this is an outer loop. (An inner loop
      // without one, such as a step owner passing the other owners' stages, is part of this loop's body.)
      if (j < i && std::regex_search(t, b, branch_re)) {
        const auto inner = labels.find(b[1]);
        if (inner != labels.end() && inner->second > target->second && inner->second < j)
          for (std::size_t q = inner->second + 1; q < j && !nested; ++q)
            nested = !lines[q].label && starts_with_any(lines[q].text, {"QGMMA", "HGMMA", "HMMA"});
      }
      ++mix.instructions;
      if (starts_with_any(op, {"QGMMA", "HGMMA", "HMMA"})) {
        if (!mix.mma++) mix.first_mma = t;
      } else if (starts_with_any(op, {"WARPGROUP.DEPBAR"})) {
        ++mix.mma_waits;
      } else if (starts_with_any(op, {"IMAD"})) {
        ++mix.imad;
      } else if (starts_with_any(op, {"FMUL", "FFMA", "FADD"})) {
        ++mix.fp32;
      } else if (starts_with_any(op, {"LOP3",   "SHF",   "PRMT", "IADD3", "ISETP", "SEL",  "LEA",   "IMNMX",
                                      "VIMNMX", "VIADD", "MOV",  "FSEL",  "P2R",   "R2P",  "PLOP3", "BMSK",
                                      "FLO",    "POPC",  "BREV", "SHL",   "SHR",   "IABS", "LOP"})) {
        ++mix.alu;
      }
    }
    if (mix.mma && !nested) loops.push_back(mix);
  }
  return loops;
}

std::string find_nvdisasm(const std::string& source_dir) {
  if (const char* env = std::getenv("MOEJIT_NVDISASM"); env && *env) return env;
  namespace fs = std::filesystem;
  for (const fs::path& p :
       {fs::path(source_dir) / ".cache/nvdisasm/nvidia/cu13/bin/nvdisasm", fs::path("/usr/local/cuda/bin/nvdisasm")})
    if (fs::exists(p)) return p.string();
  if (const char* path = std::getenv("PATH")) {
    std::istringstream dirs(path);
    for (std::string d; std::getline(dirs, d, ':');)
      if (!d.empty() && fs::exists(fs::path(d) / "nvdisasm")) return (fs::path(d) / "nvdisasm").string();
  }
  return {};
}

std::string disassemble(const std::string& nvdisasm, const std::vector<char>& cubin) {
  namespace fs = std::filesystem;
  const fs::path file = fs::temp_directory_path() / ("moejit-sass-" + std::to_string(::getpid()) + ".cubin");
  std::ofstream(file, std::ios::binary).write(cubin.data(), static_cast<std::streamsize>(cubin.size()));
  const std::string command = "'" + nvdisasm + "' -c '" + file.string() + "' 2>&1";
  std::string out;
  FILE* pipe = ::popen(command.c_str(), "r");
  if (!pipe) throw std::runtime_error("cannot run " + nvdisasm);
  std::array<char, 65536> buf;
  for (std::size_t n; (n = std::fread(buf.data(), 1, buf.size(), pipe)) > 0;) out.append(buf.data(), n);
  const int status = ::pclose(pipe);
  fs::remove(file);
  if (status != 0) throw std::runtime_error(nvdisasm + " failed: " + out.substr(0, 2000));
  return out;
}

}  // namespace moejit::sass
