//! Every interleaving of threads mapping URIs into the LV2 URID table at once: they agree on
//! each URI's URID, distinct URIs get distinct URIDs, and whoever reads a URID reads the whole
//! URI it names (a missing Release/Acquire pair shows up as a wrong or torn URI).
//!
//! Run with `RUSTFLAGS="--cfg loom" cargo test -p downbeat-plugin --test loom_urid --release`
//! in a target directory of its own (`crates/plugin/ci.sh` does).
#![cfg(loom)]

mod sync {
    pub(crate) use loom::sync::atomic::{AtomicU32, AtomicU64, AtomicU8, AtomicUsize, Ordering};
}

#[path = "../src/lv2/urid_table.rs"]
#[allow(dead_code)]
mod urid_table;

use loom::sync::Arc;
use loom::thread;
use urid_table::UridTable;

/// Two threads map the same new URI: one of them publishes it, the other finds it (in its
/// slot, or as the winner of the race for that slot), and both return the same URID.
#[test]
fn racing_for_one_uri_gives_one_urid() {
    loom::model(|| {
        let t = Arc::new(UridTable::new(2, 8));
        let other = {
            let t = t.clone();
            thread::spawn(move || t.map(b"a"))
        };
        let mine = t.map(b"a");
        let theirs = other.join().unwrap();
        assert_ne!(mine, 0);
        assert_eq!(mine, theirs);
        assert_eq!(t.uri(mine).as_deref(), Some(&b"a"[..]));
    });
}

/// "a" and "i" hash to the same slot of an 8-slot table: the loser of that slot moves on to
/// the next, and a thread that reads the other's URID reads its whole URI. (Room for three
/// entries: a thread that races for "a" and loses wastes the one it reserved.)
#[test]
fn colliding_uris_get_distinct_urids_and_read_back_whole() {
    loom::model(|| {
        let t = Arc::new(UridTable::new(4, 16));
        let other = {
            let t = t.clone();
            thread::spawn(move || {
                let e = t.map(b"i");
                // The other thread's URI, if it is there yet, reads back whole.
                let a = t.map(b"a");
                (e, a)
            })
        };
        let a = t.map(b"a");
        let (e, a_there) = other.join().unwrap();
        assert!(a != 0 && e != 0 && a != e);
        assert_eq!(a_there, a);
        assert_eq!(t.uri(e).as_deref(), Some(&b"i"[..]));
        assert_eq!(t.uri(a).as_deref(), Some(&b"a"[..]));
    });
}
