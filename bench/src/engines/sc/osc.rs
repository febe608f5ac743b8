//! Open Sound Control messages and the binary score `scsynth -N` reads.
//!
//! An OSC message is its address, its type tags (`,` then one letter per argument) and its
//! arguments, every part padded with zeros to a multiple of 4 bytes, numbers big-endian:
//! `i` a 32-bit integer, `f` a 32-bit float, `s` a string, `b` a blob (its length, then its
//! bytes). A bundle is `#bundle\0`, a 64-bit NTP time tag (seconds in the high 32 bits,
//! the fraction of a second in the low 32) and its elements, each prefixed by its length.
//!
//! A non-real-time score ("Non-Realtime Synthesis" in SuperCollider's help) is a sequence of
//! bundles in time order, each prefixed by its length as a 32-bit big-endian integer; the
//! time tags count seconds from the start of the render, and the last bundle's time is
//! where the render ends.

/// One argument of a message.
#[derive(Clone, Debug, PartialEq)]
pub enum Arg {
    Int(i32),
    Float(f32),
    Str(String),
    Blob(Vec<u8>),
}

impl From<i32> for Arg {
    fn from(v: i32) -> Self {
        Arg::Int(v)
    }
}

impl From<f32> for Arg {
    fn from(v: f32) -> Self {
        Arg::Float(v)
    }
}

impl From<&str> for Arg {
    fn from(v: &str) -> Self {
        Arg::Str(v.to_owned())
    }
}

/// An OSC message: an address such as `/s_new` and its arguments.
#[derive(Clone, Debug, PartialEq)]
pub struct Message {
    pub address: String,
    pub args: Vec<Arg>,
}

impl Message {
    pub fn new(address: &str, args: Vec<Arg>) -> Self {
        Self {
            address: address.to_owned(),
            args,
        }
    }

    /// The message's bytes.
    pub fn bytes(&self) -> Vec<u8> {
        let mut out = Vec::new();
        padded_str(&mut out, &self.address);
        let tags: String = std::iter::once(',')
            .chain(self.args.iter().map(|a| match a {
                Arg::Int(_) => 'i',
                Arg::Float(_) => 'f',
                Arg::Str(_) => 's',
                Arg::Blob(_) => 'b',
            }))
            .collect();
        padded_str(&mut out, &tags);
        for a in &self.args {
            match a {
                Arg::Int(v) => out.extend_from_slice(&v.to_be_bytes()),
                Arg::Float(v) => out.extend_from_slice(&v.to_be_bytes()),
                Arg::Str(s) => padded_str(&mut out, s),
                Arg::Blob(b) => {
                    out.extend_from_slice(&(b.len() as i32).to_be_bytes());
                    out.extend_from_slice(b);
                    pad(&mut out);
                }
            }
        }
        out
    }
}

/// A string, its terminating zero and zeros up to a multiple of 4 bytes.
fn padded_str(out: &mut Vec<u8>, s: &str) {
    out.extend_from_slice(s.as_bytes());
    out.push(0);
    pad(out);
}

fn pad(out: &mut Vec<u8>) {
    while out.len() % 4 != 0 {
        out.push(0);
    }
}

/// A bundle of messages to run at `seconds` from the start.
pub fn bundle(seconds: f64, messages: &[Message]) -> Vec<u8> {
    let mut out = b"#bundle\0".to_vec();
    let whole = seconds.floor();
    let frac = ((seconds - whole) * 4_294_967_296.0) as u64;
    out.extend_from_slice(&(((whole as u64) << 32) | frac.min(u64::from(u32::MAX))).to_be_bytes());
    for m in messages {
        let b = m.bytes();
        out.extend_from_slice(&(b.len() as i32).to_be_bytes());
        out.extend_from_slice(&b);
    }
    out
}

/// A score for `scsynth -N`: bundles `(seconds, messages)` in time order.
pub fn score(bundles: &[(f64, Vec<Message>)]) -> Vec<u8> {
    let mut out = Vec::new();
    for (t, msgs) in bundles {
        let b = bundle(*t, msgs);
        out.extend_from_slice(&(b.len() as i32).to_be_bytes());
        out.extend_from_slice(&b);
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn message_layout_is_padded_and_big_endian() {
        let m = Message::new("/n_free", vec![Arg::Int(1000)]);
        // "/n_free\0" (8) ",i\0\0" (4) then 1000.
        assert_eq!(m.bytes(), b"/n_free\0,i\0\0\0\0\x03\xe8".to_vec());
        // Six bytes of address pad to eight, one of type tags to four.
        assert_eq!(
            Message::new("/quit", vec![]).bytes(),
            b"/quit\0\0\0,\0\0\0".to_vec()
        );
        let b = Message::new("/d", vec![Arg::Blob(vec![1, 2, 3])]).bytes();
        assert_eq!(b, b"/d\0\0,b\0\0\0\0\0\x03\x01\x02\x03\0".to_vec());
    }

    #[test]
    fn time_tag_holds_seconds_and_fraction() {
        let b = bundle(2.5, &[]);
        assert_eq!(&b[8..16], &[0, 0, 0, 2, 0x80, 0, 0, 0]);
    }
}
