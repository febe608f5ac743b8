#!/usr/bin/env bash
# downbeat-file's tests compare our decoding and resampling with sox's and ffmpeg's, on files
# those tools make at test time (scripts/deps.sh installs them; the tests fail without them).
set -euo pipefail
cd "$(dirname "$0")/../.."
bash scripts/deps.sh
cargo test -p downbeat-file
