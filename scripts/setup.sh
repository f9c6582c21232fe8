#!/usr/bin/env bash
# Installs the Debian packages winfer needs, only those that are missing (fast the second time).
set -euo pipefail

packages=(cmake g++ make ninja-build pkg-config libopenblas-dev libyaml-cpp-dev doctest-dev libstb-dev zlib1g-dev
          nlohmann-json3-dev libcli11-dev)
# ONNX import: protobuf's lite runtime and protoc, and the onnx.proto schema (libonnx-dev).
packages+=(libprotobuf-dev protobuf-compiler libonnx-dev)
# The PyTorch parity tests (tests/parity/, ctest -L parity) and models/tools run on Debian's
# /usr/bin/python3 with these; without them those tests are skipped, not failed.
packages+=(python3-torch python3-torchvision python3-numpy python3-yaml)
# The Python package (scripts/python_test.sh: a venv of Debian's python, the extension built
# against its headers).
packages+=(python3-venv python3-dev)
# ccache: scripts/build.sh compiles through it, so that the package's build (python_test.sh)
# takes the engine's objects from build/'s compile instead of compiling them a second time.
packages+=(ccache)
# Fashion-MNIST (/usr/share/datasets/fashion-mnist): `winfer eval` and the test that checks the
# shipped models against PyTorch's predictions. python3-pil: models/fashion/train.py --examples
# and the image fixtures' torchvision references (tests/fixtures/images/make_fixtures.py).
packages+=(dataset-fashion-mnist python3-pil)
# The robustness stages of scripts/test.sh (docs/ERRORS.md): clang with its sanitizer and
# libFuzzer runtimes (scripts/sanitize.sh, scripts/fuzz.sh), libomp for clang's OpenMP (only
# the oneDNN bench peer links OpenMP; winfer's kernels have their own threads), llvm for
# llvm-symbolizer (readable reports).
packages+=(clang libclang-rt-14-dev libomp-dev llvm)
# lld: libwinfer.so and the CLI are linked with the functions networks execute first and together
# (cmake/code_order.cmake); without it they link with the default linker, in no such order.
packages+=(lld)
# The format check of the test suite (scripts/format.sh --check, ctest format.check).
packages+=(clang-format)
# `scripts/setup.sh --bench`: also the peer libraries of `winfer bench --layers` and of
# scripts/bench_report.sh (oneDNN, XNNPACK and the pthreadpool header XNNPACK's includes);
# the default build and the tests do not need them.
if [[ "${1:-}" == "--bench" ]]; then
  packages+=(libdnnl-dev libxnnpack-dev libpthreadpool-dev)
fi

missing=()
for p in "${packages[@]}"; do
  status=$(dpkg-query -W -f='${Status}' "$p" 2>/dev/null || true)
  [[ "$status" == "install ok installed" ]] || missing+=("$p")
done

if ((${#missing[@]} == 0)); then
  echo "setup: all ${#packages[@]} packages present"
  exit 0
fi

echo "setup: installing ${missing[*]}"
sudo=()
if [[ $(id -u) -ne 0 ]]; then
  command -v sudo >/dev/null || { echo "setup: need root (or sudo) to install: ${missing[*]}" >&2; exit 1; }
  sudo=(sudo)
fi
export DEBIAN_FRONTEND=noninteractive
"${sudo[@]}" apt-get update -qq
"${sudo[@]}" apt-get install -y -qq --no-install-recommends "${missing[@]}"
