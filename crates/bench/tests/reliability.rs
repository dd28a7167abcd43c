//! `bench reliability` still runs end to end: its cheapest row (the clean install, which every
//! other row compares with) on a fresh chain of the real operators, written as RELIABILITY.md
//! would be. It asserts that the command works and the row passes, never a timing.
//!
//! The bench binary finds (and, under cargo, first builds) `csi-operator` in the same target
//! directory and profile, as `cargo run -p bench` does.

use std::process::Command;

#[test]
fn the_clean_install_row_runs_end_to_end_and_is_written() {
    let file =
        std::env::temp_dir().join(format!("bench-reliability-test-{}.md", std::process::id()));
    let output = Command::new(env!("CARGO_BIN_EXE_bench"))
        .args([
            "reliability",
            "--quick",
            "--only",
            "clean-install",
            "--write",
        ])
        .arg(&file)
        .output()
        .expect("the bench binary runs");
    let stdout = String::from_utf8_lossy(&output.stdout);
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(
        output.status.success(),
        "bench reliability failed ({}):\n{stdout}\n{stderr}",
        output.status
    );
    assert!(
        stdout
            .lines()
            .any(|l| l.starts_with("clean-install") && l.contains("PASS")),
        "the clean install did not pass:\n{stdout}\n{stderr}"
    );
    let md = std::fs::read_to_string(&file).expect("the report was written");
    let _ = std::fs::remove_file(&file);
    assert!(md.starts_with("# Reliability\n"), "{md}");
    assert!(md.contains("`--quick`"), "a quick run says so");
    assert!(md.contains("| `clean-install` |"), "{md}");
    assert!(
        md.contains("## Open items\n\nNone: every row passed."),
        "{md}"
    );
}
