//! CLAP hosting through `clack-host`.
