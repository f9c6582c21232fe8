#!/usr/bin/env bash
# Quick start 1: set up, build, and classify a shipped example image (a Fashion-MNIST sneaker)
# with a shipped trained model, printing the top-5 labels; then run the zoo's ResNet-18 on
# seeded random weights and input (the engine on an ImageNet-sized network: the time is real,
# its classes are meaningless). Extra arguments (e.g. --threads 2 --conv im2col) go to both.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
"$root/scripts/setup.sh"
"$root/scripts/build.sh" --target winfer  # the CLI only: the tests are built by scripts/test.sh
cd "$root"
build/bin/winfer classify models/fashion/fashion_resnet.yaml models/fashion/examples/sneaker.png --top 5 "$@"
echo
build/bin/winfer run models/zoo/resnet18.yaml --random-weights 1 --top 5 "$@"
