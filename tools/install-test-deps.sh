#!/usr/bin/env bash
# Installs what the test suite needs beyond Python: Debian's Chromium, Java for the HTML checker,
# Neovim for the editor test, the pinned npm packages (axe-core, vnu-jar; the VS Code extension's
# in editors/vscode), and this package with its test extras.
set -euo pipefail
cd "$(dirname "$0")/.."

need_apt=()
command -v chromium >/dev/null 2>&1 || need_apt+=(chromium)
command -v java >/dev/null 2>&1 || need_apt+=(default-jre-headless)
command -v rg >/dev/null 2>&1 || need_apt+=(ripgrep)
command -v nvim >/dev/null 2>&1 || need_apt+=(neovim)
if [ ${#need_apt[@]} -gt 0 ]; then
  sudo_=""; [ "$(id -u)" -eq 0 ] || sudo_="sudo"
  $sudo_ apt-get -o DPkg::Lock::Timeout=900 update -qq
  DEBIAN_FRONTEND=noninteractive $sudo_ apt-get -o DPkg::Lock::Timeout=900 install -y -qq "${need_apt[@]}" >/dev/null
fi

npm ci --no-audit --no-fund --silent
npm ci --prefix editors/vscode --no-audit --no-fund --silent
python3 -m pip install -q -e '.[test]'
