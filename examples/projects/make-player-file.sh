#!/bin/sh
# Makes examples/projects/player.wav, the file examples/projects/player.toml plays: 4 s of
# plucked notes at 44.1 kHz (so the player resamples it to the project's 48 kHz), made by
# sox, so that the repository ships no third-party audio. Needs sox (apt-get install sox).
set -e
here=$(dirname "$0")
sox -n -r 44100 -c 2 -b 16 "$here/player.wav" \
    synth 1 pluck A3 pluck E4 repeat 3 fade 0 4 0.2 vol 0.7
