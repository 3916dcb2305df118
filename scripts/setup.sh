#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# Installs the Debian packages tpu-rtl builds with. Idempotent: apt-get runs only when a
# package is missing.
set -euo pipefail

packages=(verilator yosys iverilog libsystemc-dev libboost-program-options-dev cmake g++ make
          libgtest-dev libgmock-dev
          libonnx-dev libprotobuf-dev zlib1g-dev libpng-dev libjpeg-dev dataset-fashion-mnist libonnx-testdata
          clang-format openmpi-bin libopenmpi-dev python3 nlohmann-json3-dev)

missing=()
for p in "${packages[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done

if [ ${#missing[@]} -eq 0 ]; then
  echo "setup: all packages present (${packages[*]})"
  exit 0
fi

echo "setup: installing ${missing[*]}"
SUDO=""
if [ "$(id -u)" -ne 0 ]; then SUDO="sudo"; fi
$SUDO apt-get update -qq
DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq "${missing[@]}"
