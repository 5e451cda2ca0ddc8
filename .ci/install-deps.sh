#!/usr/bin/env bash
# Installs stacksim's build and test dependencies from Debian 12 packages (run as root).
# Idempotent: packages already present are skipped quickly.
set -euo pipefail
packages=(
  build-essential cmake ninja-build pkg-config
  libyaml-cpp-dev libeigen3-dev libboost-graph-dev libtbb-dev nlohmann-json3-dev
  libgtest-dev libgmock-dev libbenchmark-dev
  pybind11-dev python3-dev python3-pybind11
  python3-numpy python3-pandas python3-pytest python3-matplotlib python3-distributed python3-yaml
  python3-hypothesis
  clang libclang-rt-14-dev  # the sanitize preset: ASan, UBSan and libFuzzer (docs/reliability.md)
  clang-format              # the format test (tests/format/check_format.py, .clang-format)
)
missing=()
for p in "${packages[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if [ ${#missing[@]} -gt 0 ]; then
  SUDO=""; [ "$(id -u)" -eq 0 ] || SUDO="sudo"
  $SUDO apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq --no-install-recommends "${missing[@]}"
fi
