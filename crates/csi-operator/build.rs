//! Build facts for `csi-operator --version`: the commit the binary was built from and whether
//! the emulators are linked.
//!
//! The commit comes from `SOURCE_GIT_COMMIT`, the variable OpenShift's image builds set (and
//! our Containerfile passes as a build argument). Without it, release builds ask git; debug
//! builds do not, so that a commit does not rebuild every test binary of this crate.

use std::path::Path;
use std::process::Command;

fn main() {
    println!("cargo:rerun-if-env-changed=SOURCE_GIT_COMMIT");
    let from_env = std::env::var("SOURCE_GIT_COMMIT")
        .ok()
        .map(|s| s.trim().to_string())
        .filter(|s| !s.is_empty());
    let release = std::env::var("PROFILE").is_ok_and(|p| p == "release");
    let commit = from_env
        .or_else(|| if release { git_head() } else { None })
        .unwrap_or_else(|| "unknown (set SOURCE_GIT_COMMIT when building)".to_string());
    println!("cargo:rustc-env=CSI_OPERATOR_GIT_COMMIT={commit}");
    let kind = if std::env::var_os("CARGO_FEATURE_LAB").is_some() {
        "lab (the emulators, sim and demo are linked)"
    } else {
        "product"
    };
    println!("cargo:rustc-env=CSI_OPERATOR_BUILD_KIND={kind}");
}

/// `git rev-parse HEAD`, watching the files that change when HEAD moves.
fn git_head() -> Option<String> {
    let git = |args: &[&str]| -> Option<String> {
        let out = Command::new("git").args(args).output().ok()?;
        out.status
            .success()
            .then(|| String::from_utf8_lossy(&out.stdout).trim().to_string())
            .filter(|s| !s.is_empty())
    };
    let commit = git(&["rev-parse", "HEAD"])?;
    if let Some(dir) = git(&["rev-parse", "--absolute-git-dir"]) {
        let dir = Path::new(&dir);
        println!("cargo:rerun-if-changed={}", dir.join("HEAD").display());
        println!(
            "cargo:rerun-if-changed={}",
            dir.join("packed-refs").display()
        );
        if let Some(head_ref) = git(&["symbolic-ref", "-q", "HEAD"]) {
            println!("cargo:rerun-if-changed={}", dir.join(head_ref).display());
        }
    }
    // No "-dirty" mark: edits of the work tree do not rerun this script, so it could be stale.
    Some(commit)
}
