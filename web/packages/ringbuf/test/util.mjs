// Shared by the tests: a seeded PRNG and a sequence writer/checker, so that every element that
// crosses a ring can be checked against the one that should be there.
import assert from "node:assert/strict";

/** mulberry32: small, seedable, good enough to pick sizes. */
export class Prng {
  constructor(seed = 1) {
    this.state = seed >>> 0;
  }
  /** Uniform in [0, 1). */
  next() {
    let t = (this.state = (this.state + 0x6d2b79f5) >>> 0);
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  }
  /** Integer in [0, max]. */
  int(max) {
    return Math.floor(this.next() * (max + 1));
  }
}

/** Value number `i` of a test sequence: exact in every element type the tests use. */
export function seq(i) {
  return i % 16777216;
}

/** Writes the next values of the sequence into `array[offset .. offset + count]`. */
export class SequenceWriter {
  constructor() {
    this.index = 0;
  }
  fill(array, count = array.length, offset = 0) {
    for (let i = 0; i < count; i++) array[offset + i] = seq(this.index++);
  }
}

/** Checks that `array[offset .. offset + count]` continues the sequence. */
export class SequenceChecker {
  constructor() {
    this.index = 0;
  }
  check(array, count = array.length, offset = 0, context = "") {
    for (let i = 0; i < count; i++) {
      const want = seq(this.index);
      const got = Number(array[offset + i]);
      if (got !== want) {
        assert.fail(`element ${this.index}: got ${got}, expected ${want} ${context}`);
      }
      this.index++;
    }
  }
}
