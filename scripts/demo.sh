#!/usr/bin/env bash
# Quick start 1: set up, build, and run ResNet-18 (seeded random weights and input) on the CPU,
# printing the top classes and the time.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
"$root/scripts/setup.sh"
"$root/scripts/build.sh"
cd "$root"
build/bin/winfer run models/zoo/resnet18.yaml --random-weights 1 --top 5 "$@"
