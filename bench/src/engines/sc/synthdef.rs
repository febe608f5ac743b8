//! SuperCollider's binary SynthDef file, version 2 ("SynthDef File Format" in
//! SuperCollider's help), written without `sclang`.
//!
//! Everything is big-endian; a "pstring" is a length byte and that many bytes.
//!
//! ```text
//! file:    "SCgf" i32 version (2) i16 number of defs, then each def
//! def:     pstring name
//!          i32 constants, f32 each
//!          i32 parameters, f32 initial value each
//!          i32 parameter names, each: pstring name, i32 index of its parameter
//!          i32 unit generators, each:
//!              pstring class name, i8 rate (0 scalar, 1 control, 2 audio),
//!              i32 inputs, i32 outputs, i16 special index (the operator of a BinaryOpUGen),
//!              per input: i32 unit generator index (-1: a constant), i32 its output index
//!                         (or the constant's index),
//!              per output: i8 rate
//!          i16 variants (0 here)
//! ```
//!
//! A unit generator's inputs must come before it in the list: the server runs them in file
//! order.

/// Calculation rate of a unit generator or of one of its outputs (0, scalar, is not needed
/// here).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Rate {
    Control = 1,
    Audio = 2,
}

/// An input: a constant, or output `1` of unit generator `0`.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Input {
    Const(f32),
    UGen(usize, u32),
}

#[derive(Clone, Debug)]
struct UGen {
    class: &'static str,
    rate: Rate,
    inputs: Vec<Input>,
    outputs: Vec<Rate>,
    special: i16,
}

/// `BinaryOpUGen` operator numbers (SuperCollider's `Operators` table).
pub const OP_ADD: i16 = 0;
pub const OP_MUL: i16 = 2;

/// One SynthDef under construction.
#[derive(Clone, Debug)]
pub struct SynthDef {
    name: String,
    params: Vec<(String, f32)>,
    ugens: Vec<UGen>,
}

impl SynthDef {
    pub fn new(name: &str) -> Self {
        Self {
            name: name.to_owned(),
            params: Vec::new(),
            ugens: Vec::new(),
        }
    }

    /// Named parameters with their defaults, as the outputs of one control-rate `Control`
    /// (what `arg freq = 440` makes in `sclang`); call it once, first.
    pub fn controls(&mut self, params: &[(&str, f32)]) -> Vec<Input> {
        let first = self.params.len();
        self.params
            .extend(params.iter().map(|(n, v)| ((*n).to_owned(), *v)));
        let index = self.ugens.len();
        self.ugens.push(UGen {
            class: "Control",
            rate: Rate::Control,
            inputs: Vec::new(),
            outputs: vec![Rate::Control; params.len()],
            special: first as i16,
        });
        (0..params.len() as u32)
            .map(|k| Input::UGen(index, k))
            .collect()
    }

    /// Adds unit generator `class` with one output at `rate` and returns that output.
    pub fn ugen(&mut self, class: &'static str, rate: Rate, inputs: &[Input]) -> Input {
        self.ugen_n(class, rate, inputs, 1, 0)[0]
    }

    /// Adds a unit generator with `outputs` outputs (0 for `Out`) and `special` index.
    pub fn ugen_n(
        &mut self,
        class: &'static str,
        rate: Rate,
        inputs: &[Input],
        outputs: usize,
        special: i16,
    ) -> Vec<Input> {
        let index = self.ugens.len();
        self.ugens.push(UGen {
            class,
            rate,
            inputs: inputs.to_vec(),
            outputs: vec![rate; outputs],
            special,
        });
        (0..outputs as u32).map(|k| Input::UGen(index, k)).collect()
    }

    /// `a op b` at audio rate (`BinaryOpUGen`).
    pub fn binop(&mut self, op: i16, a: Input, b: Input) -> Input {
        self.ugen_n("BinaryOpUGen", Rate::Audio, &[a, b], 1, op)[0]
    }

    fn write(&self, out: &mut Vec<u8>) {
        let mut constants: Vec<f32> = Vec::new();
        for u in &self.ugens {
            for i in &u.inputs {
                if let Input::Const(c) = i {
                    if !constants.iter().any(|k| k.to_bits() == c.to_bits()) {
                        constants.push(*c);
                    }
                }
            }
        }
        pstring(out, &self.name);
        out.extend_from_slice(&(constants.len() as i32).to_be_bytes());
        for c in &constants {
            out.extend_from_slice(&c.to_be_bytes());
        }
        out.extend_from_slice(&(self.params.len() as i32).to_be_bytes());
        for (_, v) in &self.params {
            out.extend_from_slice(&v.to_be_bytes());
        }
        out.extend_from_slice(&(self.params.len() as i32).to_be_bytes());
        for (k, (n, _)) in self.params.iter().enumerate() {
            pstring(out, n);
            out.extend_from_slice(&(k as i32).to_be_bytes());
        }
        out.extend_from_slice(&(self.ugens.len() as i32).to_be_bytes());
        for u in &self.ugens {
            pstring(out, u.class);
            out.push(u.rate as u8);
            out.extend_from_slice(&(u.inputs.len() as i32).to_be_bytes());
            out.extend_from_slice(&(u.outputs.len() as i32).to_be_bytes());
            out.extend_from_slice(&u.special.to_be_bytes());
            for i in &u.inputs {
                let (a, b) = match i {
                    Input::Const(c) => (
                        -1,
                        constants
                            .iter()
                            .position(|k| k.to_bits() == c.to_bits())
                            .expect("collected above") as i32,
                    ),
                    Input::UGen(g, o) => (*g as i32, *o as i32),
                };
                out.extend_from_slice(&a.to_be_bytes());
                out.extend_from_slice(&b.to_be_bytes());
            }
            for r in &u.outputs {
                out.push(*r as u8);
            }
        }
        out.extend_from_slice(&0i16.to_be_bytes());
    }
}

fn pstring(out: &mut Vec<u8>, s: &str) {
    assert!(s.len() < 256, "a SynthDef name is at most 255 bytes");
    out.push(s.len() as u8);
    out.extend_from_slice(s.as_bytes());
}

/// The file holding `defs` (what `/d_recv` takes as its blob).
pub fn file(defs: &[SynthDef]) -> Vec<u8> {
    let mut out = b"SCgf".to_vec();
    out.extend_from_slice(&2i32.to_be_bytes());
    out.extend_from_slice(&(defs.len() as i16).to_be_bytes());
    for d in defs {
        d.write(&mut out);
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn writes_the_version_2_layout() {
        let mut d = SynthDef::new("t");
        let c = d.controls(&[("amp", 0.5)]);
        let s = d.ugen(
            "SinOsc",
            Rate::Audio,
            &[Input::Const(440.0), Input::Const(0.0)],
        );
        let m = d.binop(OP_MUL, s, c[0]);
        d.ugen_n("Out", Rate::Audio, &[Input::Const(0.0), m], 0, 0);
        let f = file(&[d]);
        assert_eq!(&f[..10], b"SCgf\0\0\0\x02\0\x01");
        // Name, then two constants (440 and 0), one parameter (0.5) named "amp".
        assert_eq!(&f[10..12], b"\x01t");
        assert_eq!(&f[12..16], &2i32.to_be_bytes());
        assert_eq!(&f[16..20], &440f32.to_be_bytes());
        assert_eq!(&f[20..24], &0f32.to_be_bytes());
        assert_eq!(&f[24..28], &1i32.to_be_bytes());
        assert_eq!(&f[28..32], &0.5f32.to_be_bytes());
        assert_eq!(&f[32..36], &1i32.to_be_bytes());
        assert_eq!(&f[36..40], b"\x03amp");
        assert_eq!(&f[f.len() - 2..], &[0, 0]);
    }
}
