#!/usr/bin/env bash
# Renders every example project that runs offline, and the issue-28 workloads, with two
# `downbeat` binaries, and checks that each output keeps its RMS within 1% and its pitch
# (sox's zero-crossing frequency within 1%), printing the level of the difference too.
# Exits 1 if any render differs beyond that, 2 on bad usage or a missing tool.
#
#   scripts/dsp_compare.sh OLD_DOWNBEAT NEW_DOWNBEAT [WORK_DIR]
#
# e.g. OLD = main's `target/release/downbeat` copied aside before the change.
set -euo pipefail
if [ $# -lt 2 ]; then
    echo "usage: $0 OLD_DOWNBEAT NEW_DOWNBEAT [WORK_DIR]" >&2
    exit 2
fi
old=$1 new=$2 dir=${3:-$(mktemp -d)}
for tool in sox python3; do
    command -v "$tool" >/dev/null || { echo "$0: $tool is required" >&2; exit 2; }
done
here=$(cd "$(dirname "$0")/.." && pwd)
ex=$here/examples/projects
mkdir -p "$dir"
python3 "$here/scripts/dsp_workloads.py" "$dir/w"

# name | project | extra arguments
cases=(
    "hello|$ex/hello.toml|--seconds 8"
    "synth|$ex/synth.toml|--midi $ex/tune.mid"
    "fanin84|$ex/fanin84.toml|--seconds 8"
    "echoes|$ex/echoes.toml|--seconds 8"
    "sines|$dir/w/sines.toml|--seconds 5"
    "voices|$dir/w/voices.toml|--seconds 5 --midi $dir/w/voices.mid"
    "chain|$dir/w/chain.toml|--seconds 5"
)
stat() { sox "$1" -n stat 2>&1 | awk -v k="$2" -F: '$1 ~ k {gsub(/ /, "", $2); print $2}'; }
fail=0
printf '%-8s %12s %12s %9s %9s %9s %14s\n' case rms_old rms_new rms_diff hz_old hz_new diff_below_dB
for c in "${cases[@]}"; do
    IFS='|' read -r name project extra <<<"$c"
    # shellcheck disable=SC2086 # extra holds several words on purpose
    "$old" run "$project" --device offline --threads 1 $extra --out "$dir/$name-old.wav" >/dev/null 2>&1
    # shellcheck disable=SC2086
    "$new" run "$project" --device offline --threads 1 $extra --out "$dir/$name-new.wav" >/dev/null 2>&1
    ro=$(stat "$dir/$name-old.wav" "RMS +amplitude")
    rn=$(stat "$dir/$name-new.wav" "RMS +amplitude")
    fo=$(stat "$dir/$name-old.wav" "Rough +frequency")
    fn=$(stat "$dir/$name-new.wav" "Rough +frequency")
    rd=$(sox -m -v 1 "$dir/$name-old.wav" -v -1 "$dir/$name-new.wav" -n stat 2>&1 |
        awk -F: '$1 ~ "RMS +amplitude" {gsub(/ /, "", $2); print $2}')
    read -r ok rel below <<<"$(python3 -c "
import math, sys
ro, rn, fo, fn, rd = map(float, sys.argv[1:])
rel = abs(rn - ro) / ro if ro else abs(rn)
fok = abs(fn - fo) <= 0.01 * max(fo, 1.0)
below = 'exact' if rd == 0 else '%.1f' % (20 * math.log10(ro / rd))
print(int(rel <= 0.01 and fok), '%.4f%%' % (100 * rel), below)
" "$ro" "$rn" "$fo" "$fn" "$rd")"
    printf '%-8s %12s %12s %9s %9s %9s %14s\n' "$name" "$ro" "$rn" "$rel" "$fo" "$fn" "$below"
    [ "$ok" = 1 ] || { echo "  $name: RMS or pitch moved" >&2; fail=1; }
done
exit $fail
