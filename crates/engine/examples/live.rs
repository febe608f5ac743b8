//! Plays a graph on the virtual device while another thread moves its filter, and a watcher
//! prints the filter's frequency and the output level as they change.
//!
//! ```text
//! cargo run --release -p downbeat --example live
//! ```

use std::time::{Duration, Instant};

use downbeat::control::When;
use downbeat::device::{Device, RunLength, Virtual};
use downbeat::project::Project;
use downbeat::Engine;
use downbeat_graph::Shape;

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let project = Project::parse(
        r#"
        edges = ["noise -> lp -> out"]
        [nodes.noise]
        type = "noise"
        [nodes.lp]
        type = "biquad"
        freq = 200.0
        [nodes.out]
        type = "output"
        "#,
        "live.toml",
    )?;
    let mut engine = Engine::new(project.build()?);
    // Controllers and watchers are made before the run; both move to other threads.
    let mut control = engine.controller(64);
    let mut watcher = engine.watch();
    let length = RunLength::seconds(2.0, engine.sample_rate());

    // The audio: the virtual device paces the engine like a sound card would.
    let audio = std::thread::spawn(move || Virtual::new(None).run(engine, length));

    // A control thread: sweep the filter open, then jump it back down.
    let player = std::thread::spawn(move || -> Result<(), downbeat_graph::ControlError> {
        control.ramp(When::Now, "lp", "freq", Shape::Exponential, 8000.0, 1.0)?;
        std::thread::sleep(Duration::from_millis(1200));
        control.set("lp", "freq", 300.0)?;
        // Refused with the project file's wording: `mode` cannot change while running.
        if let Err(e) = control.set("lp", "mode", 1.0) {
            println!("refused: {e}");
        }
        Ok(())
    });

    // This thread watches.
    let start = Instant::now();
    while !audio.is_finished() {
        if watcher.wait(Duration::from_millis(100)) {
            let freq = watcher.value("lp", "freq").unwrap_or(f32::NAN);
            let out = watcher.level("out").unwrap_or_default();
            println!(
                "{:5.2} s  lp.freq {freq:7.1} Hz  out peak {:6.1} dBFS",
                start.elapsed().as_secs_f64(),
                out.peak_dbfs()
            );
            std::thread::sleep(Duration::from_millis(100));
        }
    }
    player.join().expect("the control thread")?;
    let run = audio.join().expect("the audio thread")?;
    println!(
        "{} blocks, load p50 {:.3}",
        run.engine.summary().blocks,
        run.engine.summary().load_p50
    );
    Ok(())
}
