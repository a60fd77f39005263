#!/usr/bin/env bash
# Installs the official openai and Anthropic npm clients (version pinned in tests/server/clients/package.json and
# package-lock.json) for the server's compatibility tests. Idempotent: skipped when the
# installed tree already matches the lock file.
set -euo pipefail
dir="$(cd "$(dirname "$0")/.." && pwd)/tests/server/clients"
if ! command -v npm >/dev/null; then
  echo "install_api_clients: npm not found; installing Debian's npm" >&2
  SUDO=""
  [[ $(id -u) -ne 0 ]] && SUDO="sudo"
  $SUDO apt-get install -y -qq npm
fi
if [[ -f "$dir/node_modules/.package-lock.json" && "$dir/node_modules/.package-lock.json" -nt "$dir/package-lock.json" &&
      -d "$dir/node_modules/openai" && -d "$dir/node_modules/@anthropic-ai/sdk" ]]; then
  exit 0
fi
cd "$dir" && npm ci --no-audit --no-fund --loglevel=error
