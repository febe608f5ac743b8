"""Renders a chain of VST3 plugins with Spotify's pedalboard (JUCE's VST3 host), for
vst3_pedalboard.rs to compare with Downbeat's VST3 host.

    python pedalboard_render.py IN.raw OUT.raw CHANNELS RATE BLOCK BUNDLE...

IN.raw and OUT.raw are interleaved 32-bit floats, little endian. Every plugin is left at the
values it starts with.
"""
import sys

import numpy as np
import pedalboard

src, dst, channels, rate, block = sys.argv[1:6]
channels, rate, block = int(channels), int(rate), int(block)
board = pedalboard.Pedalboard([pedalboard.load_plugin(b) for b in sys.argv[6:]])
audio = np.fromfile(src, dtype="<f4").reshape(-1, channels).T.copy()
out = board(audio, rate, buffer_size=block, reset=True)
out.T.astype("<f4").tofile(dst)
