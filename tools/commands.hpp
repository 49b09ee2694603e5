#pragma once
// The moejit subcommands. Each takes argv from the subcommand name on, and
// returns the process exit code. One file per command: cmd_<name>.cpp.

namespace moejit::tools {

struct Command {
  const char* name;
  const char* summary;
  int (*run)(int argc, char** argv);
};

int cmd_cache(int argc, char** argv);
int cmd_doctor(int argc, char** argv);
int cmd_inspect(int argc, char** argv);
int cmd_plan(int argc, char** argv);
int cmd_precompile(int argc, char** argv);
int cmd_run(int argc, char** argv);

// Every command, in the order `moejit --help` lists them.
inline constexpr Command k_commands[] = {
    {"run", "the main job: compile the kernels for a built-in configuration and, with a GPU, run and check them",
     cmd_run},
    {"plan", "the geometry the planner picks for a model, batch sizes and device (Table 2 shape, or JSON)", cmd_plan},
    {"inspect", "show a kernel's source, PTX, per-pass PTX diffs, final PTX and resources", cmd_inspect},
    {"precompile", "compile every kernel a configuration can need into the cache (no GPU needed)", cmd_precompile},
    {"cache", "the kernel cache: ls, verify, clear, stats, export, import", cmd_cache},
    {"doctor", "report the toolchain, the driver, the GPU and the cache directory", cmd_doctor},
};

}  // namespace moejit::tools
