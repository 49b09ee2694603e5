#include "ptx_passes/pass_tensormap_by_value.hpp"

#include <fmt/format.h>

#include "ptx_passes/operands.hpp"
#include "ptx_passes/ptx_isa.hpp"

namespace moejit::ptx {
namespace {
constexpr PtxVersion k_cvta_param{7, 7};

std::string where(const Module& m, const Statement& s) {
  return fmt::format("{} {}", m.location(s.loc), s.opcode().str());
}
}  // namespace

Precondition TensorMapByValuePass::precondition(const Module&) const {
  if (maps_.empty()) return Precondition::no("no TensorMap formals");
  return Precondition::yes();
}

std::vector<Change> TensorMapByValuePass::run(Module& m) const {
  const std::vector<const Decl*> versions = m.find_decls(DeclKind::version);
  if (versions.size() == 1) {
    const auto v = PtxVersion::parse(versions[0]->text.drop_front(8).ltrim(" \t"));
    if (v && *v < k_cvta_param)
      fail_at(m, name(),
              fmt::format("the module is PTX {}; a kernel parameter's generic address (cvta.param) needs PTX {}",
                          v->str(), k_cvta_param.str()),
              versions[0]->loc);
  }
  std::vector<Change> changes;
  for (const TensorMapFormal& map : maps_) {
    std::vector<Change> c = rewrite(m, map);
    changes.insert(changes.end(), c.begin(), c.end());
  }
  return changes;
}

std::vector<Change> TensorMapByValuePass::rewrite(Module& m, const TensorMapFormal& map) const {
  Entry& e = single_entry(m, name(), map.entry);
  const std::string& formal = map.formal;

  std::vector<llvm::SMLoc> declared;
  Param* param = nullptr;
  for (Param& p : e.params)
    if (p.name == formal) declared.push_back(p.loc), param = &p;
  expect_count(m, name(), fmt::format("formals named '{}' in entry '{}'", formal, e.name), 1, declared, e.loc);
  if ((param->type != ".u64" && param->type != ".b64") || param->array_size)
    fail_at(m, name(),
            fmt::format("TensorMap formal '{}' is declared '{}', not the .u64 pointer of the kernel ABI", formal,
                        param->declaration()),
            param->loc);

  // Every reference to the formal must be its one load.
  std::vector<llvm::SMLoc> refs;
  size_t load = 0;
  for (size_t i = 0; i < e.body.size(); ++i)
    if (e.body[i].kind == StatementKind::instruction && count_token(e.body[i].text, formal) > 0)
      refs.push_back(e.body[i].loc), load = i;
  expect_count(m, name(), fmt::format("loads of TensorMap formal '{}' (ld.param.u64 %rd, [{}])", formal, formal), 1,
               refs, param->loc);
  const Statement& ld = e.body[load];
  const std::vector<llvm::StringRef> ops = split_operands(ld.operands());
  const llvm::StringRef opcode = ld.opcode();
  if ((opcode != "ld.param.u64" && opcode != "ld.param.b64") || ld.text.starts_with("@") || ops.size() != 2 ||
      !ops[0].starts_with("%") || ops[1] != "[" + formal + "]")
    fail_at(m, name(), fmt::format("the one reference to '{}' is not 'ld.param.u64 %rd, [{}];'", formal, formal),
            ld.loc);
  const std::string reg = ops[0].str();

  std::vector<llvm::SMLoc> uses;
  std::string use_list;
  for (size_t i = 0; i < e.body.size(); ++i) {
    const Statement& s = e.body[i];
    if (i == load) continue;
    if (s.kind == StatementKind::directive && s.text.starts_with(".reg") && count_token(s.text, reg) > 0)
      fail_at(m, name(), fmt::format("{} (TensorMap '{}') is redeclared in a nested scope", reg, formal), s.loc);
    if (writes_register(s, reg))
      fail_at(m, name(), fmt::format("{} (TensorMap '{}') is written again after its load", reg, formal), s.loc);
    if (!reads_register(s, reg)) continue;
    if (s.opcode().starts_with("cvta.to.global"))
      fail_at(m, name(),
              fmt::format("{} (TensorMap '{}') is converted to a global address: the kernel reads the descriptor as "
                          "global memory, which a by-value map is not in",
                          reg, formal),
              s.loc);
    uses.push_back(s.loc);
    use_list += (use_list.empty() ? "" : ", ") + where(m, s);
  }
  expect_count(m, name(), fmt::format("instructions reading {} (TensorMap '{}')", reg, formal),
               static_cast<size_t>(map.uses), uses, ld.loc);

  const std::string before = param->declaration();
  param->text = m.save(fmt::format(".param .align 128 .b8 {}[128]", formal));
  param->type = ".b8";
  param->align = 128;
  param->pointer = false;
  param->pointer_space.clear();
  param->pointer_align = 0;
  param->array_size = 128;
  param->written = true;

  // Keep the load's spacing between opcode and operands for the two new lines.
  const llvm::StringRef gap =
      ld.text.drop_front(opcode.size()).take_while([](char c) { return c == ' ' || c == '\t'; });
  const std::string sep = gap.empty() ? " " : gap.str();
  const llvm::SMLoc load_loc = ld.loc;
  Statement& mov = e.body[load];
  mov.text = m.save(fmt::format("mov.b64{}{}, {};", sep, reg, formal));
  mov.written = true;
  m.insert_statement_after(e, load, fmt::format("cvta.param.u64{}{}, {};", sep, reg, reg));

  return {
      {param->loc,
       fmt::format("{}: '.param {} {}' -> '.param .align 128 .b8 {}[128]'", e.name, before, formal, formal)},
      {load_loc, fmt::format("{}: ld.param.u64 {} -> mov.b64 + cvta.param.u64 (parameter-space address)", e.name, reg)},
      {load_loc, fmt::format("{}: {} read by {} instruction(s), as expected: {}", e.name, reg, uses.size(), use_list)},
  };
}

}  // namespace moejit::ptx
