//! `downbeat jitter`: how late a periodic tick wakes up on this machine.

mod meter;

use std::fmt;
use std::time::Duration;

use downbeat_cli::Failure;

use crate::values::parse_seconds;
use meter::{Settings, SpinMode};

/// `downbeat jitter` arguments.
#[derive(clap::Args)]
pub(crate) struct Args {
    /// Tick period, e.g. 16ms, 1.45ms or 500us.
    #[arg(long, default_value = "16ms", value_parser = parse_period)]
    period: Duration,
    /// How long to measure.
    #[arg(long, default_value_t = 10.0, value_parser = parse_seconds)]
    seconds: f64,
    /// Background threads that sleep 1 ms in a loop, to load the scheduler.
    #[arg(long, default_value_t = 0, value_parser = clap::value_parser!(u16).range(0..=5000))]
    load: u16,
    /// Do not ask for real-time priority (what a user without permission gets; setting
    /// DOWNBEAT_NO_RT=1 does the same).
    #[arg(long)]
    no_rt: bool,
    /// How the last stretch before each deadline is waited for.
    #[arg(long, value_enum, default_value_t = SpinMode::Adaptive)]
    spin: SpinMode,
    /// Pin the ticking thread to this core.
    #[arg(long, value_name = "CORE")]
    pin: Option<usize>,
    /// Print the result as one JSON object on stdout.
    #[arg(long)]
    json: bool,
}

/// Measures and prints the result (as JSON with `--json`).
pub(crate) fn run(args: &Args) -> Result<(), Failure> {
    let cores = downbeat_rt::pool::available_cores();
    if let Some(pin) = args.pin.filter(|&c| c >= cores) {
        return Err(Failure::Input(format!(
            "--pin {pin}: this machine has cores 0 to {}",
            cores - 1
        )));
    }
    let settings = Settings {
        period: args.period,
        seconds: args.seconds,
        load: usize::from(args.load),
        no_rt: args.no_rt,
        spin: args.spin,
        pin: args.pin,
        json: args.json,
    };
    if !args.json {
        println!(
            "downbeat jitter: period {:.3} ms for {} s, {} load thread(s)",
            args.period.as_secs_f64() * 1e3,
            args.seconds,
            args.load
        );
    }
    let summary = meter::run(&settings)?;
    for note in &summary.notes {
        eprintln!("note: {note}");
    }
    if args.json {
        println!(
            "{}",
            serde_json::to_string(&summary).expect("summary serializes")
        );
    } else {
        println!("scheduling: {}", summary.realtime);
        print!("{}", meter::render(&summary, args.spin));
    }
    Ok(())
}

/// Why a period was refused.
#[derive(Debug)]
pub(crate) enum PeriodError {
    /// No number, or one that does not parse.
    NotAPeriod(String),
    /// A number without a unit.
    NoUnit(String),
    /// A unit that is not one of time.
    BadUnit(String),
    /// Below 50 µs or above 10 s.
    OutOfRange(String),
}

impl fmt::Display for PeriodError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            PeriodError::NotAPeriod(s) => {
                write!(f, "`{s}` is not a period: e.g. 16ms, 1.45ms or 500us")
            }
            PeriodError::NoUnit(s) => write!(f, "`{s}` needs a unit: e.g. 16ms, 1.45ms or 500us"),
            PeriodError::BadUnit(u) => write!(
                f,
                "`{u}` is not a unit of time: use s, ms, us or ns (e.g. 16ms)"
            ),
            PeriodError::OutOfRange(s) => {
                write!(f, "`{s}` is out of range: give a period from 50us to 10s")
            }
        }
    }
}

impl std::error::Error for PeriodError {}

/// Parses `16ms`, `1.45ms`, `500us`, `500µs`, `0.02s` or `20000ns`.
pub(crate) fn parse_period(s: &str) -> Result<Duration, PeriodError> {
    let t = s.trim();
    let split = t
        .find(|c: char| !(c.is_ascii_digit() || c == '.'))
        .unwrap_or(t.len());
    let (num, unit) = t.split_at(split);
    if num.is_empty() {
        return Err(PeriodError::NotAPeriod(s.to_string()));
    }
    let scale = match unit.trim() {
        "s" => 1.0,
        "ms" => 1e-3,
        "us" | "µs" => 1e-6,
        "ns" => 1e-9,
        "" => return Err(PeriodError::NoUnit(s.to_string())),
        other => return Err(PeriodError::BadUnit(other.to_string())),
    };
    let v: f64 = num
        .parse()
        .map_err(|_| PeriodError::NotAPeriod(s.to_string()))?;
    let secs = v * scale;
    if !(50e-6..=10.0).contains(&secs) {
        return Err(PeriodError::OutOfRange(s.to_string()));
    }
    Ok(Duration::from_secs_f64(secs))
}
