// Tone.js' Transport in headless Chromium, for `downbeat-bench transport`: renders clicks on
// every beat through a tempo song with Tone.Offline and prints each click's first frame.
//
//   node bench/tone-transport.mjs SONG.json OUT.json
//
// SONG.json: { "sample_rate", "seconds", "beats", "tempo": [[seconds, bpm, "set" | "linear"], ...] }
// (the tempo automation of Transport.bpm: a value set at a time, or a linear ramp ending at
// a time). Each beat starts a ConstantSourceNode of offset 1 for 10 ms through the raw
// OfflineAudioContext, so that the click's first non-zero frame is the frame Web Audio
// starts it on. OUT.json: { "onsets": [frame, ...], "tone": VERSION }.

import { readFileSync, writeFileSync } from "node:fs";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";
import { launchChromium } from "../test-browser/chromium.mjs";

const [songPath, outPath] = process.argv.slice(2);
if (!songPath || !outPath) {
  console.error("usage: node bench/tone-transport.mjs SONG.json OUT.json");
  process.exit(2);
}
const song = JSON.parse(readFileSync(songPath, "utf8"));
const here = dirname(fileURLToPath(import.meta.url));
const tonePath = join(here, "..", "node_modules", "tone", "build", "Tone.js");
const tone = JSON.parse(readFileSync(join(here, "..", "node_modules", "tone", "package.json"), "utf8")).version;

const { browser, close } = await launchChromium();
try {
  const page = await browser.newPage();
  await page.setContent("<html><body>tone</body></html>");
  await page.addScriptTag({ path: tonePath });
  const onsets = await page.evaluate(async (song) => {
    const buffer = await Tone.Offline((context) => {
      const transport = context.transport;
      const raw = context.rawContext;
      for (const [at, bpm, how] of song.tempo) {
        if (how === "set") transport.bpm.setValueAtTime(bpm, at);
        else transport.bpm.linearRampToValueAtTime(bpm, at);
      }
      let beat = 0;
      transport.scheduleRepeat((time) => {
        if (beat++ >= song.beats) return;
        const click = raw.createConstantSource();
        click.offset.value = 1;
        click.connect(raw.destination);
        click.start(time);
        click.stop(time + 0.01);
      }, "4n", 0);
      transport.start(0);
    }, song.seconds, 1, song.sample_rate);
    const data = buffer.getChannelData(0);
    const found = [];
    let zeros = Infinity;
    for (let i = 0; i < data.length; i++) {
      if (data[i] === 0) zeros++;
      else {
        if (zeros >= 100) found.push(i);
        zeros = 0;
      }
    }
    return found;
  }, song);
  writeFileSync(outPath, JSON.stringify({ onsets, tone }));
} finally {
  await close();
}
