//! Wait-free single-producer single-consumer ring buffer shared by Rust, WebAssembly and JavaScript.
#![no_std]
