#!/usr/bin/env bash
# Install Debian's chromium and chromium-driver for the monitor's browser tests (idempotent).
# The browser tests drive /usr/bin/chromium through /usr/bin/chromedriver; no browser is downloaded.
set -euo pipefail
if command -v chromium >/dev/null 2>&1 && command -v chromedriver >/dev/null 2>&1; then
    echo "chromium and chromedriver are installed: $(chromium --version 2>/dev/null || true)"
    exit 0
fi
SUDO=""
if [ "$(id -u)" -ne 0 ]; then
    if command -v sudo >/dev/null 2>&1; then SUDO="sudo"; else
        echo "install_chromium.sh: run as root or install sudo: apt-get install -y chromium chromium-driver" >&2
        exit 1
    fi
fi
export DEBIAN_FRONTEND=noninteractive
$SUDO apt-get update
$SUDO apt-get install -y --no-install-recommends chromium chromium-driver
command -v chromium >/dev/null && command -v chromedriver >/dev/null
echo "installed: $(chromium --version 2>/dev/null || true)"
