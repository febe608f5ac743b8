//! Plain-text tables, as `downbeat audit` prints them (one row per callback, or per plugin).

use std::fmt::Write as _;

/// Appends `head` and `rows` to `out` as a table: each column left-aligned to its widest
/// cell, columns two spaces apart, no trailing spaces, one line per row.
///
/// ```
/// use downbeat_plugin::audit::write_table;
///
/// let mut out = String::new();
/// write_table(&mut out, ["plugin", "result"], &[["gain".into(), "clean".into()]]);
/// assert_eq!(out, "plugin  result\ngain    clean\n");
/// ```
pub fn write_table<const N: usize>(out: &mut String, head: [&str; N], rows: &[[String; N]]) {
    let mut width = head.map(str::len);
    for row in rows {
        for (w, cell) in width.iter_mut().zip(row) {
            *w = (*w).max(cell.len());
        }
    }
    let mut line = |cells: [&str; N]| {
        let parts: Vec<String> = cells
            .iter()
            .zip(width)
            .map(|(c, w)| format!("{c:<w$}"))
            .collect();
        let _ = writeln!(out, "{}", parts.join("  ").trim_end());
    };
    line(head);
    for row in rows {
        line(row.each_ref().map(String::as_str));
    }
}
