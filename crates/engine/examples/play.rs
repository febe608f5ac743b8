//! A sine on the sound card whose pitch changes while it plays; Enter, or the end of the
//! input, stops it. Exits 1 when the engine does not play a change within 2 s.
//!
//! ```text
//! cargo run -p downbeat --example play                                       # virtual device
//! cargo run -p downbeat --features system --example play -- --device system # the speakers
//! ```

use std::error::Error;
use std::process::ExitCode;
use std::sync::mpsc;
use std::time::{Duration, Instant};

use downbeat::device::{Device, Virtual};
use downbeat::nodes::{Output, Sine, SineSettings};
use downbeat::watch::Watcher;
use downbeat::{start, Engine};
use downbeat_graph::{CompileConfig, Graph};

fn play(device: impl Device + Send + 'static, rate: u32) -> Result<(), Box<dyn Error>> {
    let mut g = Graph::new();
    let osc = g.add(
        "osc",
        Sine::new(
            2,
            rate,
            &SineSettings {
                freq: 220.0,
                amp: 0.2,
                ..SineSettings::default()
            },
        ),
    );
    let out = g.add("out", Output::new(2));
    g.connect(osc, out);
    g.set_output(out);
    let cfg = CompileConfig {
        sample_rate: rate,
        max_block: 256,
    };
    let mut engine = Engine::new(g.compile(cfg)?);
    // Made before the run; from then on they reach the engine from this thread.
    let mut control = engine.controller(16);
    let mut watcher = engine.watch();
    let running = start(engine, device);
    println!("playing 220 Hz; Enter stops");

    // Enter, or the end of the input, stops the run.
    let (enter, pressed) = mpsc::channel();
    std::thread::spawn(move || {
        let _ = std::io::stdin().read_line(&mut String::new());
        let _ = enter.send(());
    });
    for freq in [262.0, 294.0, 330.0, 392.0, 440.0].into_iter().cycle() {
        control.set("osc", "freq", freq)?; // smoothed over a few ms, so no click
        if let Err(e) = heard(&mut watcher, freq) {
            running.stop()?; // a device that failed says why
            return Err(e.into());
        }
        println!("{freq} Hz");
        if pressed.recv_timeout(Duration::from_millis(500)).is_ok() {
            break;
        }
    }
    let run = running.stop()?;
    println!(
        "stopped after {:.2} s",
        run.report.frames as f64 / f64::from(rate)
    );
    Ok(())
}

/// Waits until the engine plays `freq`: a watcher sees the values of each block played.
fn heard(watcher: &mut Watcher, freq: f32) -> Result<(), String> {
    let deadline = Instant::now() + Duration::from_secs(2);
    while watcher.value("osc", "freq") != Some(freq) {
        if Instant::now() > deadline {
            return Err(format!("the engine did not play {freq} Hz within 2 s"));
        }
        watcher.wait(Duration::from_millis(10));
    }
    Ok(())
}

fn main() -> ExitCode {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let result = match args.iter().map(String::as_str).collect::<Vec<_>>()[..] {
        [] | ["--device", "virtual"] => play(Virtual::new(None), 48_000),
        // The sound card decides the rate: 48 kHz when it can, else its own.
        #[cfg(feature = "system")]
        ["--device", "system"] => downbeat::device::System::new(None)
            .sample_rate_for(48_000, false)
            .map_err(Into::into)
            .and_then(|rate| play(downbeat::device::System::new(None), rate)),
        #[cfg(not(feature = "system"))]
        ["--device", "system"] => {
            Err("this build has no system device: add `--features system`".into())
        }
        _ => Err("usage: play [--device virtual|system]".into()),
    };
    match result {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("play: {e}");
            ExitCode::FAILURE
        }
    }
}
