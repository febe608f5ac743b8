#!/usr/bin/env bash
# downbeat-file's tests compare our decoding and resampling with sox's and ffmpeg's, on files
# those tools make at test time: install them when missing (the tests fail without them).
set -euo pipefail
cd "$(dirname "$0")/../.."
if ! command -v sox >/dev/null || ! command -v ffmpeg >/dev/null \
    || ! sox -h 2>/dev/null | grep -q 'AUDIO FILE FORMATS:.* flac'; then
    echo "installing sox, libsox-fmt-all and ffmpeg (Debian) for downbeat-file's tests"
    apt-get update -qq
    DEBIAN_FRONTEND=noninteractive apt-get install -y -qq sox libsox-fmt-all ffmpeg >/dev/null
fi
cargo test -p downbeat-file
