// bench engines: renders one case in node-web-audio-api's OfflineAudioContext.
//   node render.mjs CASE.json OUT.f32
// CASE.json comes from bench/src/engines/web.rs; OUT.f32 receives the mono output as raw
// little-endian 32-bit floats. The graph mirrors the Downbeat project and the
// SuperCollider score of the same case, one audio node per Downbeat node.
import { readFileSync, writeFileSync } from 'node:fs';
import {
  AudioBufferSourceNode, BiquadFilterNode, GainNode, OfflineAudioContext, OscillatorNode,
} from 'node-web-audio-api';

const [casePath, outPath] = process.argv.slice(2);
const spec = JSON.parse(readFileSync(casePath, 'utf8'));
const g = spec.graph;
const ctx = new OfflineAudioContext({
  numberOfChannels: 1,
  length: spec.frames,
  sampleRate: spec.sample_rate,
});

function gain(value) {
  return new GainNode(ctx, { gain: value });
}

switch (spec.case) {
  case 'sines':
    for (const [frequency, amp] of g.sines) {
      const osc = new OscillatorNode(ctx, { type: 'sine', frequency });
      osc.connect(gain(amp)).connect(ctx.destination);
      osc.start(0);
    }
    break;
  case 'voices':
    for (const v of g.voices) {
      const osc = new OscillatorNode(ctx, { type: 'sawtooth', frequency: v.freq });
      const lp = new BiquadFilterNode(ctx, { type: 'lowpass', frequency: v.cutoff, Q: g.q_db });
      // The ADSR, sample by sample: a linear attack, then the decay's exponential curve;
      // the voice's velocity and amp scale the whole envelope.
      const env = gain(0);
      env.gain.setValueAtTime(0, 0);
      env.gain.linearRampToValueAtTime(v.gain, g.attack);
      env.gain.setTargetAtTime(v.gain * g.decay_goal, g.attack, g.decay_tau);
      osc.connect(lp).connect(env).connect(ctx.destination);
      osc.start(0);
    }
    break;
  case 'chain': {
    // Web Audio has no noise node: a looped second of uniform noise from a fixed seed.
    const buf = ctx.createBuffer(1, spec.sample_rate, spec.sample_rate);
    const data = buf.getChannelData(0);
    let x = 0x9e3779b9;
    for (let i = 0; i < data.length; i++) {
      x ^= x << 13; x >>>= 0; x ^= x >>> 17; x ^= x << 5; x >>>= 0;
      data[i] = (x / 4294967296 * 2 - 1) * g.noise_amp;
    }
    const src = new AudioBufferSourceNode(ctx, { buffer: buf, loop: true });
    let node = src;
    for (const k of g.gains) node = node.connect(gain(k));
    node.connect(ctx.destination);
    src.start(0);
    break;
  }
  case 'fanin':
    for (const [frequency, amp] of g.branches) {
      const osc = new OscillatorNode(ctx, { type: 'sine', frequency });
      let node = osc.connect(gain(amp));
      for (const k of g.stages) {
        node = node
          .connect(new BiquadFilterNode(ctx, { type: 'lowpass', frequency: g.cutoff, Q: g.q_db }))
          .connect(gain(k));
      }
      node.connect(ctx.destination);
      osc.start(0);
    }
    break;
  default:
    console.error(`render.mjs: unknown case ${spec.case} in ${casePath}`);
    process.exit(2);
}

const rendered = await ctx.startRendering();
const out = rendered.getChannelData(0);
writeFileSync(outPath, Buffer.from(out.buffer, out.byteOffset, out.byteLength));
