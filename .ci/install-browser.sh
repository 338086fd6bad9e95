#!/usr/bin/env bash
# Installs Debian's chromium for tests/it/report/browser.rs (headless DOM and
# screenshot checks of the HTML report). Idempotent: does nothing when a
# chromium is already on PATH. Called from .ci/run.
set -euo pipefail
if command -v chromium >/dev/null 2>&1; then
    echo "install-browser: $(chromium --version 2>/dev/null || echo chromium) already installed"
    exit 0
fi
export DEBIAN_FRONTEND=noninteractive
apt-get update -qq
apt-get install -y -qq --no-install-recommends chromium >/dev/null
echo "install-browser: installed $(chromium --version 2>/dev/null || echo chromium)"
