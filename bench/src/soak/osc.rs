//! The OSC traffic: another process (this binary, `soak --osc-send ADDR`) sends
//! [`OSC_RATE`](super::OSC_RATE) messages a second over UDP for the run, and says on stdout
//! how many it sent. The messages are encoded here by hand (OSC 1.0: padded address,
//! padded type tags, big-endian floats), which keeps `rosc` out of the bench's
//! dependencies; the engine's server decodes them with `rosc`.

use std::net::{SocketAddr, UdpSocket};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

/// Events the OSC server's controller holds: 4 s of traffic, as `downbeat run --osc` has.
pub const SERVER_QUEUE: usize = 4096;

/// What the sender process reports.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct Sent {
    /// Messages handed to the socket.
    pub sent: u64,
    /// Sends that failed (the server's socket gone, say): each a lost message.
    pub errors: u64,
    /// Seconds from the first send to the last.
    pub seconds: f64,
}

/// One OSC message of float arguments.
pub fn message(address: &str, args: &[f32]) -> Vec<u8> {
    fn padded(out: &mut Vec<u8>, s: &str) {
        out.extend_from_slice(s.as_bytes());
        // A terminating NUL, then NULs to a multiple of four bytes.
        out.push(0);
        while out.len() % 4 != 0 {
            out.push(0);
        }
    }
    let mut out = Vec::with_capacity(64);
    padded(&mut out, address);
    padded(&mut out, &format!(",{}", "f".repeat(args.len())));
    for a in args {
        out.extend_from_slice(&a.to_be_bytes());
    }
    out
}

/// The messages the sender cycles through: a smoothed set, a step and a ramp on the synth,
/// the player, the mix and fanin84's last compressor (nodes every variant of the project
/// keeps), each value different from the one before.
fn messages() -> Vec<Vec<u8>> {
    (0..64)
        .map(|k| {
            let t = k as f32 / 63.0;
            match k % 5 {
                0 => message("/node/keys/cutoff", &[800.0 + 4000.0 * t]),
                1 => message("/node/file/gain", &[0.3 + 0.5 * t]),
                2 => message("/node/mix/pan", &[-0.3 + 0.6 * t]),
                3 => message("/node/l4_00/threshold_db/step", &[-40.0 + 20.0 * t]),
                _ => message("/node/lowpass/freq/ramp", &[2000.0 + 3000.0 * t, 0.05]),
            }
        })
        .collect()
}

/// The sender process: sends `rate` messages a second to `addr` for `seconds`, catching up
/// after any pause the machine imposes (the count is by the clock, not by the sleeps),
/// then prints what it sent as one JSON object and returns 0 (2 when it cannot send at all).
pub fn sender_main(addr: &str, seconds: f64, rate: u32) -> i32 {
    // A soak stopped half way (Ctrl-C, a crash) must not leave its sender sending for the
    // rest of the hour: the sender stops when its parent is gone. (Not PR_SET_PDEATHSIG,
    // which fires when the parent's thread that started it ends, here the control thread.)
    let parent = std::os::unix::process::parent_id();
    let socket = match UdpSocket::bind("127.0.0.1:0").and_then(|s| s.connect(addr).map(|()| s)) {
        Ok(s) => s,
        Err(e) => {
            eprintln!("soak: osc sender: cannot reach {addr}: {e}");
            return 2;
        }
    };
    let messages = messages();
    let total = (seconds.max(0.0) * f64::from(rate)) as u64;
    let start = Instant::now();
    let (mut sent, mut errors) = (0u64, 0u64);
    while sent + errors < total {
        let due = ((start.elapsed().as_secs_f64() * f64::from(rate)) as u64).min(total);
        while sent + errors < due {
            match socket.send(&messages[((sent + errors) % messages.len() as u64) as usize]) {
                Ok(_) => sent += 1,
                Err(_) => errors += 1,
            }
        }
        std::thread::sleep(Duration::from_millis(1));
        if std::os::unix::process::parent_id() != parent {
            eprintln!("soak: osc sender: the soak is gone; stopping");
            return 2;
        }
    }
    let seconds = start.elapsed().as_secs_f64();
    println!(
        "{}",
        serde_json::json!({ "sent": sent, "errors": errors, "seconds": seconds })
    );
    0
}

/// Starts the sender process for `seconds`, sending to `to`.
pub fn spawn_sender(to: SocketAddr, seconds: f64) -> Result<Child, String> {
    let exe = std::env::current_exe().map_err(|e| format!("cannot find this binary: {e}"))?;
    Command::new(exe)
        .args(["soak", "--osc-send", &to.to_string(), "--osc-seconds"])
        .arg(seconds.to_string())
        .stdout(Stdio::piped())
        .spawn()
        .map_err(|e| format!("cannot start the OSC sender: {e}"))
}

/// Waits for the sender process and reads what it sent.
pub fn wait_sender(child: Child) -> Result<Sent, String> {
    let out = child
        .wait_with_output()
        .map_err(|e| format!("OSC sender: {e}"))?;
    if !out.status.success() {
        return Err(format!("the OSC sender failed ({})", out.status));
    }
    let v: serde_json::Value =
        serde_json::from_slice(&out.stdout).map_err(|e| format!("the OSC sender's report: {e}"))?;
    let field = |k: &str| {
        v[k].as_f64()
            .ok_or_else(|| format!("the OSC sender's report lacks {k}"))
    };
    Ok(Sent {
        sent: field("sent")? as u64,
        errors: field("errors")? as u64,
        seconds: field("seconds")?,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn messages_are_osc_1_0() {
        let m = message("/node/g/gain", &[0.5]);
        // "/node/g/gain" is 12 bytes: a NUL makes 13, padding 16; ",f" + NUL + pad: 4.
        assert_eq!(&m[..16], b"/node/g/gain\0\0\0\0");
        assert_eq!(&m[16..20], b",f\0\0");
        assert_eq!(&m[20..], &0.5f32.to_be_bytes());
        let two = message("/a", &[1.0, 2.0]);
        assert_eq!(&two[..8], b"/a\0\0,ff\0");
        assert_eq!(two.len(), 16);
    }

    #[test]
    fn the_engine_takes_every_message_the_sender_cycles_through() {
        use downbeat::control::osc::OscHandler;
        let dir = std::env::temp_dir().join(format!("soak-osc-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let files = super::super::project::write(&dir).unwrap();
        let p = downbeat::project::Project::load(&files.project).unwrap();
        let mut engine = downbeat::Engine::new(p.build().unwrap());
        let mut handler = OscHandler::new(engine.controller(256));
        for m in messages() {
            assert_eq!(handler.handle(&m), Ok(1));
        }
        let _ = std::fs::remove_dir_all(&dir);
    }
}
