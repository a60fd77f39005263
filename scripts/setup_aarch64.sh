#!/usr/bin/env bash
# Installs what scripts/test_aarch64.sh needs on an x86-64 Debian host: the aarch64 cross compiler,
# qemu's user-mode emulator to run its binaries, and the arm64 builds of the libraries glia links
# (Debian multiarch installs them beside the host's). Idempotent, like setup.sh.
set -euo pipefail
packages=(
  g++-aarch64-linux-gnu qemu-user
  libfmt-dev:arm64 libpcre2-dev:arm64 libutf8proc-dev:arm64 zlib1g-dev:arm64
  libgtest-dev:arm64 libgmock-dev:arm64 libcpp-httplib-dev:arm64
)
SUDO=""
[[ $(id -u) -ne 0 ]] && SUDO="sudo"
missing=()
for p in "${packages[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if ((${#missing[@]})); then
  export DEBIAN_FRONTEND=noninteractive
  dpkg --print-foreign-architectures | grep -qx arm64 || $SUDO dpkg --add-architecture arm64
  $SUDO apt-get update -qq
  $SUDO apt-get install -y -qq "${missing[@]}"
fi
