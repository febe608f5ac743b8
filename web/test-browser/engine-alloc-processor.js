// A processor that creates garbage on purpose (a 128-element array per quantum, about 1 KiB), for the test that shows
// the worklet GC detector in engine-live.test.mjs sees garbage when there is some.
const keep = [null];
class Allocating extends AudioWorkletProcessor {
  process(_inputs, outputs) {
    keep[0] = new Array(128).fill(0);
    outputs[0][0].fill(0);
    return true;
  }
}
registerProcessor("downbeat-test-allocating", Allocating);
