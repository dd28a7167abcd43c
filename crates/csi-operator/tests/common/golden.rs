//! The reviewed golden files of `render`: compare, or rewrite with `UPDATE_GOLDEN=1`. Included
//! by path from the render tests, which need nothing else of `common`.

use std::path::Path;

/// Fails, naming the first differing line, unless `rendered` is the file at `golden`; with
/// `UPDATE_GOLDEN` set, writes it first.
pub fn assert_matches(rendered: &str, golden: &Path) {
    if std::env::var_os("UPDATE_GOLDEN").is_some() {
        std::fs::write(golden, rendered).expect("write the golden file");
    }
    let want = std::fs::read_to_string(golden).unwrap_or_else(|e| {
        panic!(
            "cannot read {}: {e}; generate it with UPDATE_GOLDEN=1",
            golden.display()
        )
    });
    if rendered != want {
        let first = rendered
            .lines()
            .zip(want.lines())
            .position(|(a, b)| a != b)
            .unwrap_or_else(|| rendered.lines().count().min(want.lines().count()));
        panic!(
            "render output differs from {} at line {}:\n  got:  {:?}\n  want: {:?}\n\
             (regenerate with UPDATE_GOLDEN=1 and review the diff)",
            golden.display(),
            first + 1,
            rendered.lines().nth(first),
            want.lines().nth(first)
        );
    }
}
