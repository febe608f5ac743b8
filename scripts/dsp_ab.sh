#!/usr/bin/env bash
# A/B of two `downbeat` binaries on the issue-28 workloads (scripts/dsp_workloads.py):
# 20 s of audio at 48 kHz, 64-frame blocks, one thread, offline; RUNS runs each, the two
# binaries alternating (old first on even runs, new first on odd ones). Prints every run's
# user+system CPU seconds (`/usr/bin/time -f "%U %S"`), then per workload the medians with
# min..max and old/new (> 1 = the new binary is faster).
#
#   scripts/dsp_ab.sh OLD_DOWNBEAT NEW_DOWNBEAT [RUNS=5] [WORK_DIR]
set -euo pipefail
if [ $# -lt 2 ]; then
    echo "usage: $0 OLD_DOWNBEAT NEW_DOWNBEAT [RUNS] [WORK_DIR]" >&2
    exit 2
fi
old=$1 new=$2 runs=${3:-5} dir=${4:-$(mktemp -d)}
[ -x /usr/bin/time ] || { echo "$0: /usr/bin/time is required (Debian package 'time')" >&2; exit 2; }
here=$(cd "$(dirname "$0")/.." && pwd)
python3 "$here/scripts/dsp_workloads.py" "$dir/w"
echo "load average at start: $(cut -d' ' -f1-3 /proc/loadavg)"
one() { # binary workload -> cpu seconds
    local extra=()
    [ "$2" = voices ] && extra=(--midi "$dir/w/voices.mid")
    /usr/bin/time -f "%U %S" -o "$dir/t" "$1" run "$dir/w/$2.toml" --device offline --threads 1 \
        --seconds 20 "${extra[@]}" --out "$dir/out.wav" >/dev/null 2>&1
    awk '{print $1 + $2}' "$dir/t"
}
for w in sines voices chain; do
    : >"$dir/$w.old"
    : >"$dir/$w.new"
    for ((r = 0; r < runs; r++)); do
        if ((r % 2 == 0)); then
            one "$old" $w >>"$dir/$w.old"
            one "$new" $w >>"$dir/$w.new"
        else
            one "$new" $w >>"$dir/$w.new"
            one "$old" $w >>"$dir/$w.old"
        fi
    done
    python3 - "$w" "$dir/$w.old" "$dir/$w.new" <<'PY'
import statistics, sys
w, a, b = sys.argv[1], [float(x) for x in open(sys.argv[2])], [float(x) for x in open(sys.argv[3])]
ma, mb = statistics.median(a), statistics.median(b)
print(f"{w:7} old {ma:6.2f} s ({min(a):.2f}..{max(a):.2f})  new {mb:6.2f} s ({min(b):.2f}..{max(b):.2f})"
      f"  old/new {ma / mb:5.2f}  runs {len(a)}  old {a}  new {b}")
PY
done
echo "load average at end: $(cut -d' ' -f1-3 /proc/loadavg)"
