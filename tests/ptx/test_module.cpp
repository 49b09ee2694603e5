// The PTX module model: byte-identical round trips of real NVRTC output and of
// every fixture, what the model reads, and parse errors with file:line:col.
#include <doctest/doctest.h>

#include "codegen/emit.hpp"
#include "ptx_passes/ptx_module.hpp"
#include "templates/registry.hpp"
#include "tests/ptx/ptx_test_support.hpp"

using namespace moejit;
using moejit::ptx::Module;
using moejit::ptx::StatementKind;

TEST_CASE("every kernel's NVRTC PTX round-trips byte for byte on sm_90a, sm_100a and sm_120a") {
  const std::vector<codegen::KernelSpec> specs = test::all_kernel_specs();
  // smoke, tma-probe and sm-probe on three targets, mma-probe on sm_120a; the MoE kernels (dispatch, compute, finalize,
  // transform) of sm_90a's fast and exact paths, and sm_120a's one path (no dispatch: it reads the caller's x)
  REQUIRE(specs.size() == 10 + 4 + 4 + 3);
  for (const codegen::KernelSpec& spec : specs) {
    CAPTURE(spec.summary());
    const std::string& ptx = test::nvrtc_ptx(spec);
    const Module m = Module::parse(ptx, "nvrtc.ptx");
    CHECK(m.print() == ptx);
    REQUIRE(m.entries().size() == 1);
    CHECK(m.entries()[0].name == spec.entry_name());
    CHECK(m.entries()[0].params.size() == spec.params.size());
    CHECK(m.find_decls(ptx::DeclKind::version).size() == 1);
    REQUIRE(m.find_decls(ptx::DeclKind::target).size() == 1);
    CHECK(m.find_decls(ptx::DeclKind::target)[0]->text == ".target " + std::string(spec.target.name()));
    CHECK(m.toolchain_release().rfind("13.", 0) == 0);
  }
}

TEST_CASE("every template is compiled by one of those kernels, so the round trip covers it") {
  const std::vector<codegen::KernelSpec> specs = test::all_kernel_specs();
  for (const templates::TemplateFile& t : templates::all()) {
    CAPTURE(t.name);
    bool covered = false;
    for (const codegen::KernelSpec& spec : specs)
      for (const auto& [name, bytes] : codegen::emit_source(spec).headers) covered |= name == t.name;
    CHECK(covered);
  }
}

TEST_CASE("every fixture round-trips byte for byte") {
  const std::vector<std::string> names = test::fixture_names();
  REQUIRE(names.size() >= 5);
  for (const std::string& name : names) {
    CAPTURE(name);
    const std::string text = test::read_fixture(name);
    CHECK(Module::parse(text, name).print() == text);
  }
}

TEST_CASE("the model reads the header, declarations, formals, directives and statements") {
  const Module m = Module::parse(test::read_fixture("edge_syntax.ptx"), "edge_syntax.ptx");
  std::vector<ptx::DeclKind> kinds;
  for (const ptx::Decl& d : m.decls()) kinds.push_back(d.kind);
  using K = ptx::DeclKind;
  CHECK(kinds ==
        std::vector<K>{K::version, K::target, K::address_size, K::other, K::other, K::other, K::entry, K::entry});
  CHECK(m.decls()[3].text == ".global .align 4 .b8 lut[8] = {1, 2, 3, 4, 5, 6, 7, 8};");
  CHECK(m.decls()[3].leading.contains("/* a block comment"));
  CHECK(m.location(m.decls()[3].loc) == "edge_syntax.ptx:15:1");

  REQUIRE(m.entries().size() == 2);
  const ptx::Entry& one = m.entries()[0];
  CHECK(one.name == "edge_one_line");
  REQUIRE(one.params.size() == 3);
  CHECK((one.params[0].name == "n" && one.params[0].type == ".u32" && !one.params[0].array_size));
  CHECK((one.params[1].name == "blob" && one.params[1].type == ".b8" && one.params[1].align == 8 &&
         one.params[1].array_size == 16u));
  CHECK((one.params[2].name == "dst" && one.params[2].pointer && one.params[2].pointer_space == ".global" &&
         one.params[2].pointer_align == 16 && one.params[2].align == 0));
  CHECK(one.params[2].declaration() == ".u64 .ptr .global .align 16");
  REQUIRE(one.directives.size() == 2);
  CHECK((one.directives[0].name == ".reqntid" && one.directives[0].values == std::vector<std::int64_t>{64}));
  CHECK((one.directives[1].name == ".maxnreg" && one.directives[1].values == std::vector<std::int64_t>{40}));

  int labels = 0, opens = 0, closes = 0;
  for (const ptx::Statement& s : one.body) {
    labels += s.kind == StatementKind::label;
    opens += s.kind == StatementKind::block_open;
    closes += s.kind == StatementKind::block_close;
  }
  CHECK(labels == 1);
  CHECK(opens == 2);
  CHECK(closes == 2);
  // Two statements on one line, the second after a block comment.
  const auto dst_load = std::find_if(one.body.begin(), one.body.end(),
                                     [](const ptx::Statement& s) { return s.text == "ld.param.u64 %rd1, [dst];"; });
  REQUIRE(dst_load != one.body.end());
  CHECK(dst_load->leading == " /* a block comment */ ");
  CHECK(m.location(dst_load->loc) == "edge_syntax.ptx:38:52");
  // A statement over three lines; a guarded branch.
  const auto call =
      std::find_if(one.body.begin(), one.body.end(), [](const ptx::Statement& s) { return s.opcode() == "call.uni"; });
  REQUIRE(call != one.body.end());
  CHECK(call->text == "call.uni (ret0),\n\ttwice,\n\t(arg0);");
  CHECK(call->operands() == "(ret0),\n\ttwice,\n\t(arg0)");
  const auto branch =
      std::find_if(one.body.begin(), one.body.end(), [](const ptx::Statement& s) { return s.opcode() == "bra"; });
  REQUIRE(branch != one.body.end());
  CHECK(branch->text == "@%p1 bra DONE;");

  const ptx::Entry& none = m.entries()[1];
  CHECK(none.name == "edge_no_params");
  CHECK(none.params.empty());
  CHECK(none.params_close.empty());
  REQUIRE(none.directives.size() == 2);
  CHECK(none.directives[0].values == std::vector<std::int64_t>{32, 1, 1});
  CHECK(none.directives[1].text == ".pragma \"nounroll\";");
}

TEST_CASE("NVVM 20 pointer formals carry .ptr .align 1") {
  const Module m = Module::parse(test::nvrtc_ptx("tma-probe", test::sm120()), "tma.ptx");
  const ptx::Param& p = m.entries()[0].params[0];
  CHECK(p.type == ".u64");
  CHECK(p.pointer);
  CHECK(p.pointer_align == 1);
  CHECK(p.text == ".param .u64 .ptr .align 1 moejit_tma_probe_param_0");
}

TEST_CASE("parse errors name file:line:col and the problem") {
  const std::string head = ".version 8.0\n.target sm_90a\n.address_size 64\n";
  struct Case {
    std::string text, expected;
  };
  const Case cases[] = {
      {head + ".visible .entry k()\n{\n\tret;\n", "t.ptx:4:1: error: entry 'k': missing '}' at the end of its body"},
      {head + ".visible .entry k()\n{\n\tmov.u32 %r1, 0\n}\n",
       "t.ptx:7:1: error: unexpected '}' inside a statement (a missing ';'?)"},
      {".version 9\n", "t.ptx:1:11: error: expected '.version MAJOR.MINOR'"},
      {".address_size 48\n", "t.ptx:1:1: error: .address_size must be 32 or 64"},
      {head + "/* never closed\n", "t.ptx:4:1: error: unterminated comment"},
      {head + ".visible .entry k(.param x)\n{\n}\n", "t.ptx:4:26: error: expected the formal's type"},
      {head + ".visible .entry k(.param .u32 a .param .u32 b)\n{\n}\n",
       "t.ptx:4:33: error: expected ',' or ')' after formal 'a'"},
      {head + ".visible .entry k() .bogus 1\n{\n}\n",
       "t.ptx:4:21: error: unexpected '.bogus' between the formals and the body of entry 'k'"},
      {head + ".file 1 \"never closed\n", "t.ptx:4:9: error: unterminated string"},
      {head + "}\n", "t.ptx:4:1: error: unexpected '}'"},
      // 2^32 + 128: it was truncated to 128 in the u32 field.
      {head + ".visible .entry k(.param .align 4294967424 .b8 t[128])\n{\n}\n",
       "t.ptx:4:33: error: '.align' must be a power of two (1 to 2^31)"},
      {head + ".visible .entry k(.param .align 48 .b8 t[128])\n{\n}\n",
       "t.ptx:4:33: error: '.align' must be a power of two (1 to 2^31)"},
  };
  for (const Case& c : cases) {
    CAPTURE(c.text);
    try {
      Module::parse(c.text, "t.ptx");
      FAIL("parsed");
    } catch (const ptx::ParseError& e) {
      CHECK(std::string(e.what()).rfind(c.expected, 0) == 0);
      CHECK(std::string(e.what()).find('^') != std::string::npos);  // the caret line
      if (std::string(e.what()).rfind(c.expected, 0) != 0) MESSAGE(e.what());
    }
  }
}

TEST_CASE("a rewrite keeps every byte it does not touch") {
  const std::string text = test::nvrtc_ptx("smoke", test::sm90());
  Module m = Module::parse(text, "smoke.ptx");
  ptx::Statement& s = m.entries()[0].body[10];
  const size_t at = static_cast<size_t>(s.text.data() - m.start().getPointer());
  const size_t size = s.text.size();
  s.text = m.save("/* rewritten */");
  const std::string printed = m.print();
  CHECK(printed.substr(0, at) == text.substr(0, at));
  CHECK(printed.substr(at, 15) == "/* rewritten */");
  CHECK(printed.substr(at + 15) == text.substr(at + size));
  m.insert_statement_after(m.entries()[0], 10, "bar.sync 0;");
  CHECK(m.print().find("/* rewritten */\n\tbar.sync 0;") != std::string::npos);
}
