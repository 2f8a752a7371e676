#!/usr/bin/env bash
# Installs the two outside extractors the benchmark runs beside the crates, from PyPI and npm,
# under target/extract-tools/ (never into the repository): Python trafilatura 2.2.0 and
# Readability.js 0.6.0 with jsdom. Needs python3 (with venv) and node >= 20.19.
set -euo pipefail
root="$(cd "$(dirname "$0")/../../.." && pwd)"
dir="$root/target/extract-tools"
mkdir -p "$dir/js"
python3 -m venv "$dir/venv"
"$dir/venv/bin/pip" install --quiet trafilatura==2.2.0 lxml_html_clean
cd "$dir/js"
[ -f package.json ] || npm init -y >/dev/null
npm install --silent @mozilla/readability@0.6.0 jsdom@29
echo "installed under $dir"
