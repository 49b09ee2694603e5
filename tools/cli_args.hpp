#pragma once
// A small, strict command-line parser: `--name value`, `--name=value` and
// flags. Unknown options, missing values and an option given twice that is
// not repeatable are errors that name the option.

#include <map>
#include <optional>
#include <stdexcept>
#include <string>
#include <string_view>
#include <vector>

namespace moejit::tools {

class UsageError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

struct OptionSpec {
  std::string name;  // without dashes
  bool takes_value = true;
  std::string help;
  std::string value_name = "VALUE";
  bool repeatable = false;  // may be given several times (get_all); otherwise twice is an error
};

class Args {
 public:
  // Parses argv[first..] against `options`. Throws UsageError.
  Args(const std::vector<OptionSpec>& options, int argc, char** argv, int first);

  bool has(const std::string& name) const { return values_.count(name) != 0; }
  std::optional<std::string> get(const std::string& name) const;
  // Every value of a repeatable option, in command-line order.
  std::vector<std::string> get_all(const std::string& name) const;
  std::string get_or(const std::string& name, const std::string& fallback) const;
  // Integer option within [lo, hi]; the error names the option, value and range.
  long long get_int(const std::string& name, long long fallback, long long lo, long long hi) const;
  const std::vector<std::string>& positional() const { return positional_; }
  // Throws UsageError naming the first argument that is no option's (a command that takes none).
  void no_positional() const;

 private:
  std::map<std::string, std::string> values_;
  std::map<std::string, std::vector<std::string>> all_values_;
  std::vector<std::string> positional_;
};

// A command-line value as an error message quotes it: at most 64 bytes, control
// bytes escaped (cache/printable.hpp), so a 2 MB argument or an escape
// sequence never reaches the terminal whole.
std::string excerpt(std::string_view value);

// "  --name VALUE   help" lines for a command's --help.
std::string format_options(const std::vector<OptionSpec>& options);

}  // namespace moejit::tools
