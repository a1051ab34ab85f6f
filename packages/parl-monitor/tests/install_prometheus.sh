#!/usr/bin/env bash
# Install Debian's prometheus for the monitor's scrape test (test_prometheus.py: a real Prometheus scrapes /metrics);
# idempotent. The test starts /usr/bin/prometheus itself on loopback; the package's own service is not needed.
set -euo pipefail
if command -v prometheus >/dev/null 2>&1; then
    echo "prometheus is installed: $(prometheus --version 2>&1 | head -n 1)"
    exit 0
fi
SUDO=""
if [ "$(id -u)" -ne 0 ]; then
    if command -v sudo >/dev/null 2>&1; then SUDO="sudo"; else
        echo "install_prometheus.sh: run as root or install sudo: apt-get install -y prometheus" >&2
        exit 1
    fi
fi
export DEBIAN_FRONTEND=noninteractive
$SUDO apt-get update
# (--no-install-recommends: no node exporter; policy-rc.d-less containers may not start its service, which is fine)
$SUDO apt-get install -y --no-install-recommends prometheus
command -v prometheus >/dev/null
echo "installed: $(prometheus --version 2>&1 | head -n 1)"
