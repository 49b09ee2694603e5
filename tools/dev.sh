#!/usr/bin/env bash
# moejit's single entry point for set-up, builds and tests. Each command
# installs what it needs (idempotent: only missing Debian packages), so it
# works on a fresh machine.
#
#   tools/dev.sh run [moejit run options]  the main job (build Release, then `moejit run`)
#   tools/dev.sh test                      format check, Release build + all tests, the Python
#                                          package (pip install .) + its CPU tests,
#                                          ASan+UBSan build + CPU tests
#   tools/dev.sh build [release|debug|asan]
#   tools/dev.sh dist DIR                  install the Release binaries, the test programs and the
#                                          Python wheel into DIR (for the GPU machine: tools/gpu_session.sh)
#   tools/dev.sh deps                      install the Debian packages only
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."

JOBS=${MOEJIT_JOBS:-$(nproc)}
PACKAGES=(cmake g++ make clang-format llvm-19-dev libzstd-dev libfmt-dev nlohmann-json3-dev doctest-dev)

log() { printf '\033[1m== %s\033[0m\n' "$*"; }

deps() {
  local missing=()
  for p in "${PACKAGES[@]}"; do
    dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
  done
  if ((${#missing[@]})); then
    log "installing Debian packages: ${missing[*]}"
    local sudo=""
    [ "$(id -u)" -eq 0 ] || sudo="sudo"
    $sudo apt-get update -qq
    DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq --no-install-recommends "${missing[@]}"
  fi
  # nvdisasm for the SASS instruction-budget test (the toolkit here has none):
  # NVIDIA's wheel, unpacked into the repository's ignored .cache/.
  if [ ! -x .cache/nvdisasm/nvidia/cu13/bin/nvdisasm ] && ! command -v nvdisasm >/dev/null; then
    log "installing nvdisasm (pip wheel nvidia-cuda-nvdisasm) into .cache/nvdisasm"
    command -v pip3 >/dev/null || { local sudo=""; [ "$(id -u)" -eq 0 ] || sudo="sudo";
      $sudo apt-get update -qq && DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq python3-pip; }
    pip3 install -q --no-deps --target .cache/nvdisasm 'nvidia-cuda-nvdisasm==13.*' ||
      pip3 install -q --no-deps --break-system-packages --target .cache/nvdisasm 'nvidia-cuda-nvdisasm==13.*'
  fi
  if [ ! -x /usr/local/cuda/bin/nvcc ] && [ ! -f /usr/local/cuda/include/nvrtc.h ]; then
    echo "error: the CUDA 13 toolkit is not in /usr/local/cuda (NVRTC and nvJitLink are required)" >&2
    exit 1
  fi
}

build() {
  local preset=${1:-release}
  log "configure + build ($preset)"
  cmake --preset "$preset" >/dev/null
  cmake --build --preset "$preset" -j "$JOBS"
}

# The Python package as a user installs it (`pip install .`, in a venv under
# build/), built against the C++ package just installed from build/release so
# only the binding compiles, then its tests (no GPU needed; GPU ones skip).
python_tests() {
  log "Python package: pip install . (against build/release's install), then its tests"
  local prefix="$PWD/build/release/python-prefix" venv="$PWD/build/venv"
  cmake --install build/release --prefix "$prefix" >/dev/null
  if [ ! -x "$venv/bin/python" ]; then
    python3 -m venv "$venv" 2>/dev/null || {
      local sudo=""
      [ "$(id -u)" -eq 0 ] || sudo="sudo"
      $sudo apt-get update -qq && DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq python3-venv
      python3 -m venv "$venv"
    }
  fi
  "$venv/bin/pip" install -q --disable-pip-version-check numpy
  CMAKE_PREFIX_PATH="$prefix" CMAKE_GENERATOR="Unix Makefiles" \
    "$venv/bin/pip" install -q --disable-pip-version-check --force-reinstall --no-deps .
  (cd build && "$venv/bin/python" -m unittest discover -s ../python/tests -v)
}

format_check() {
  log "clang-format check"
  git ls-files '*.cpp' '*.hpp' '*.cuh' | xargs clang-format --dry-run --Werror
}

cmd=${1:-help}
shift || true
case "$cmd" in
  deps) deps ;;
  build) deps; build "${1:-release}" ;;
  run)
    deps
    build release
    log "moejit run $*"
    exec build/release/tools/moejit run "$@"
    ;;
  test)
    deps
    format_check
    build release
    log "tests (release)"
    MOEJIT_REQUIRE_NVDISASM=1 ctest --preset release -j "$JOBS"
    python_tests
    build asan
    # Not the SASS budgets nor the compile-everything sweeps: their time is
    # NVRTC's and nvJitLink's, which the sanitizers do not instrument (the
    # release run has them; ~5 minutes here under ASan).
    log "CPU tests under ASan+UBSan"
    ctest --preset asan -j "$JOBS" -LE 'gpu|sass|sweep'
    ;;
  dist)
    deps
    build release
    dest=${1:?usage: tools/dev.sh dist DIR}
    case $dest in /*) ;; *) dest="$PWD/$dest" ;; esac  # the wheel's build finds the package here, from any folder
    cmake --install build/release --prefix "$dest" >/dev/null
    for t in build/release/tests/moejit_*_tests; do install -m 755 "$t" "$dest/bin/"; done
    # The wheel for the GPU machine's python3 (3.12, KINDS.md; MOEJIT_WHEEL_PYTHON
    # overrides) and the commit, for tools/gpu_session.sh.
    py=""
    for c in ${MOEJIT_WHEEL_PYTHON:-} python3.12 "$HOME"/.pyenv/versions/3.12*/bin/python3.12 python3; do
      if "$c" -c 'import sys' 2>/dev/null; then py=$c && break; fi
    done
    log "Python wheel with $("$py" --version) ($py)"
    rm -rf "$dest/wheels"
    CMAKE_PREFIX_PATH="$dest" CMAKE_GENERATOR="Unix Makefiles" \
      "$py" -m pip wheel -q --disable-pip-version-check --no-deps -w "$dest/wheels" .
    echo "$(git rev-parse --short HEAD)$(git diff --quiet HEAD || echo -dirty)" >"$dest/COMMIT"
    log "installed into $dest"
    ;;
  *)
    sed -n '2,13p' "$0" | sed 's/^# \{0,1\}//'
    [ "$cmd" = help ] || exit 2
    ;;
esac
