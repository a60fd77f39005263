#!/usr/bin/env bash
# Installs every Debian package the build and the tests need. Idempotent: packages already present
# are skipped, so running it again on a set-up machine costs only the dpkg query.
set -euo pipefail
packages=(
  build-essential cmake ninja-build pkg-config
  libfmt-dev nlohmann-json3-dev libcli11-dev libpcre2-dev libutf8proc-dev zlib1g-dev
  googletest libgtest-dev libgmock-dev libbenchmark-dev
  liblzma-dev zlib1g-dev xz-utils gzip python3-jinja2
  libcpp-httplib-dev
)
missing=()
for p in "${packages[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if ((${#missing[@]})); then
  SUDO=""
  [[ $(id -u) -ne 0 ]] && SUDO="sudo"
  export DEBIAN_FRONTEND=noninteractive
  $SUDO apt-get update -qq
  $SUDO apt-get install -y -qq "${missing[@]}"
fi
# The openai and Anthropic npm clients for the server's compatibility tests (tests/server/clients).
"$(dirname "$0")/install_api_clients.sh"
