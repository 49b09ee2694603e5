// Items 13 and 11 of issue 15 for `moejit inspect --ptx`: a long single line
// makes nvJitLink superlinear (a 20 MB line ran over 300 s inside the
// library), and a PTX error echoed its whole source line. Lines over 1 MiB
// are now refused before nvJitLink sees them, the file is read up to 64 MiB,
// and a diagnostic quotes a window of its line, control bytes as '?'.
#include <doctest/doctest.h>

#include "hostile_util.hpp"

using namespace moejit;
using moejit::test::TempDir;

namespace {
const std::string k_fixture = std::string(MOEJIT_SOURCE_DIR) + "/tests/ptx/fixtures/two_kernels.ptx";

test::CliResult inspect(const TempDir& scratch, const std::string& ptx) {
  return test::moejit(scratch, scratch / "cache", {"inspect", "--ptx", ptx, "--target", "sm_90a"}, {}, 120);
}

size_t lines_in(const std::string& text) {
  return static_cast<size_t>(std::count(text.begin(), text.end(), '\n'));
}
}  // namespace

TEST_CASE("item 13: inspect --ptx refuses a 20 MB line at once instead of hanging in nvJitLink") {
  TempDir scratch;
  const std::string module = test::read_text(k_fixture);
  const std::string file = scratch / "long_line.ptx";
  test::write_text(file, module + std::string(20000000, ' ') + "\n");
  const auto t0 = std::chrono::steady_clock::now();
  const test::CliResult r = inspect(scratch, file);
  const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  INFO(r.output);
  CHECK(r.exit_code == 1);
  CHECK(test::contains(r.output, "--ptx " + file + ": line " + std::to_string(lines_in(module) + 1) +
                                     " is 20000000 bytes, over the limit of 1048576"));
  CHECK(seconds < 60);
  MESSAGE("refused in " << seconds << " s");

  const test::CliResult zero = inspect(scratch, "/dev/zero");
  CHECK(zero.exit_code == 1);
  CHECK(test::contains(zero.output, "--ptx /dev/zero: larger than 64 MiB"));
}

TEST_CASE("item 11: a PTX error quotes a window of a long line, never the whole line or its control bytes") {
  TempDir scratch;
  const std::string module = test::read_text(k_fixture);
  const std::string file = scratch / "bad.ptx";
  test::write_text(file, module + std::string(900000, ' ') + "\x1b[31m }\n");
  const test::CliResult r = inspect(scratch, file);
  INFO(r.output.substr(0, 2000));
  CHECK(r.exit_code == 1);
  CHECK(test::contains(r.output, "bad.ptx:" + std::to_string(lines_in(module) + 1) + ":900007: error: unexpected '}'"));
  CHECK(test::contains(r.output, "?[31m }"));
  CHECK(r.output.find('\x1b') == std::string::npos);
  CHECK(r.output.size() < 2000);
}
