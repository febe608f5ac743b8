#!/usr/bin/env bash
# The guard's own suite again, optimised and with RUST_BACKTRACE=1. Inlining
# at opt-level 3 changes what runs inside the armed scope, and with
# RUST_BACKTRACE set every scope captures the backtrace of its first
# allocation and free: that capture must neither be counted nor deadlock,
# a panicking scope included (the panic hook holds std's backtrace lock).
set -euo pipefail
cd "$(dirname "$0")/../.."
RUST_BACKTRACE=1 cargo test --release -p downbeat-rt --tests
