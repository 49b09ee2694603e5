// Items 4, 8 and 11 of issue 15 for model configuration files and the command
// line: a 60k-deep array crashed `plan --config` (the error path dumped it
// recursively), `--config /dev/zero` read until memory ran out, 1e400 lost the
// file name, values >= 2^63 wrapped negative, repeated keys and options took
// the last silently, and errors echoed whole values and raw control bytes.
#include <doctest/doctest.h>

#include "codegen/moe_config.hpp"
#include "hostile_util.hpp"

using namespace moejit;
using moejit::test::TempDir;

namespace {
const std::string k_rest = R"("top_k": 8, "hidden": 6144, "intermediate": 2048)";

// `plan --config FILE` on the h200 profile.
test::CliResult plan(const TempDir& scratch, const std::string& file, std::vector<std::string> extra = {}) {
  std::vector<std::string> args = {"plan", "--config", file, "--batch", "1", "--device", "h200"};
  args.insert(args.end(), extra.begin(), extra.end());
  return test::moejit(scratch, scratch / "cache", args);
}

std::string load_error(const std::string& path) {
  try {
    codegen::load_moe_config(path);
  } catch (const std::exception& e) {
    return e.what();
  }
  return "no error";
}

bool printable_ascii(const std::string& text) {
  for (char c : text)
    if ((c < 0x20 || c > 0x7e) && c != '\n' && c != '\t') return false;
  return true;
}
}  // namespace

TEST_CASE("item 4: plan --config with an array 60k deep is an error naming the file, not a crash") {
  TempDir scratch;
  const std::string file = scratch / "deep.json";
  test::write_text(file, R"({"experts": )" + test::deep_array(60000) + ", " + k_rest + "}");
  const test::CliResult r = plan(scratch, file);
  INFO(r.output);
  CHECK(r.exit_code == 1);
  CHECK(test::contains(r.output, file + ": nested deeper than 16 levels"));
}

TEST_CASE("item 8: --config /dev/zero stops at 1 MiB, naming the file") {
  TempDir scratch;
  const auto t0 = std::chrono::steady_clock::now();
  const test::CliResult r = plan(scratch, "/dev/zero");
  INFO(r.output);
  CHECK(r.exit_code == 1);
  CHECK(test::contains(r.output, "/dev/zero: larger than 1048576 bytes"));
  CHECK(std::chrono::steady_clock::now() - t0 < std::chrono::seconds(60));
}

TEST_CASE("item 11: config nits: 1e400, 2^63, repeated keys, long values, control bytes") {
  TempDir scratch;
  const std::string file = scratch / "cfg.json";
  auto error_for = [&](const std::string& text) {
    test::write_text(file, text);
    return load_error(file);
  };
  CHECK(error_for(R"({"experts": 256, "swiglu_clamp": 1e400, )" + k_rest + "}") ==
        file + ": not valid JSON: number overflow parsing '1e400'");
  CHECK(error_for(R"({"experts": 256, "ranks": 9223372036854775808, )" + k_rest + "}") ==
        file + ": ranks = 9223372036854775808 is invalid: does not fit a 32-bit integer");
  CHECK(error_for(R"({"experts": 256, "ranks": -9223372036854775808, )" + k_rest + "}") ==
        file + ": ranks = -9223372036854775808 is invalid: does not fit a 32-bit integer");
  CHECK(error_for(R"({"experts": 256, "hidden": 520, )" + k_rest + "}") == file + ": the key \"hidden\" appears twice");

  const std::string long_error =
      error_for(R"({"experts": 256, "recipe": ")" + std::string(900000, 'x') + "\", " + k_rest + "}");
  CHECK(test::contains(long_error, "recipe = \"xxxxxxxx"));
  CHECK(test::contains(long_error, "... (900000 bytes)\" is invalid"));
  CHECK(long_error.size() < 400);

  const std::string esc_error = error_for(R"({"experts": 256, "name": "\u001b[31mevil", )" + k_rest + "}");
  CHECK(esc_error == file + ": name = \"\\x1b[31mevil\" is invalid: must be 1 to 64 printable ASCII characters");

  // From the CLI: exit 1, nothing but printable text on the terminal.
  const test::CliResult r = plan(scratch, file);
  CHECK(r.exit_code == 1);
  CHECK(test::contains(r.output, "\\x1b[31mevil"));
  CHECK(printable_ascii(r.output));
}

TEST_CASE("item 11: a repeated option is refused; a long or binary argument is quoted short and escaped") {
  TempDir scratch;
  const test::CliResult twice =
      test::moejit(scratch, scratch / "c",
                   {"plan", "--model", "glm5.2", "--ranks", "8", "--ranks", "4", "--batch", "1", "--device", "h200"});
  CHECK(twice.exit_code == 2);
  CHECK(test::contains(twice.output, "option '--ranks' given twice ('8' and '4'); give it once"));

  const std::string junk = "\x1b]0;owned\x07" + std::string(100000, 'y');
  const test::CliResult long_arg = test::moejit(
      scratch, scratch / "c", {"plan", "--model", junk, "--ranks", "8", "--batch", "1", "--device", "h200"});
  INFO(long_arg.output);
  CHECK(long_arg.exit_code == 2);
  CHECK(test::contains(long_arg.output, "--model: '\\x1b]0;owned\\x07yyyy"));
  CHECK(test::contains(long_arg.output, "... (100010 bytes)' is not one of glm5.2, dsv4.1-flash"));
  CHECK(long_arg.output.size() < 400);
  CHECK(printable_ascii(long_arg.output));
}
