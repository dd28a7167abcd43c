//! Running a user guide (a page of `docs/`) as a test, so that what the guides tell an
//! administrator to type keeps working: every fenced `sh` block is run, in order, with bash
//! and the real `kubectl` against a testbed cluster, as a user following the page would.
//!
//! The conventions a guide follows (docs/README.md says the same for their authors):
//!
//! - ```` ```sh ```` blocks are run by `bash -euo pipefail` in a scratch directory and must
//!   succeed. The directory holds what the user brings (`clouds.yaml`, `ca.pem`, …, given by
//!   the test) and a `manifests` link to this repository's `manifests/`; it is also `HOME`;
//!   `KUBECONFIG` names a kubeconfig of the cluster's administrator and `PATH` starts with
//!   `csi-operator`.
//! - ```` ```yaml file=PATH ```` blocks are files the guide has the user write: they are
//!   written to `PATH` (relative, directories made) in that directory when the runner reaches
//!   them.
//! - ```` ```text output ```` right after a `sh` block is what that block prints: every line
//!   of it must be a line of the output, compared word by word after collapsing blanks, where
//!   the word `*` matches any one word (an age, a generated name).
//! - Any other block (```` ```yaml ```` without `file=`, ```` ```text ````) is for reading only.
//!
//! A guide cannot skip a command: a block the runner does not understand fails the test.

#![allow(dead_code)] // not every guide test uses every helper

use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::{Duration, Instant};

/// One fenced block of a guide.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Block {
    /// The info string after the opening fence, e.g. `sh` or `yaml file=pvc.yaml`.
    pub info: String,
    pub body: String,
    /// Line of the opening fence (1-based), for messages.
    pub line: usize,
}

/// What the runner does with a block.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Step {
    Run { script: String, line: usize },
    Write { file: String, content: String },
    Expect { lines: Vec<String>, line: usize },
    Read,
}

/// The fenced blocks of a Markdown document, in order. Fences are three or more backticks at
/// the start of a line (indented list items included); the closing fence has at least as many.
pub fn blocks(markdown: &str) -> Result<Vec<Block>, String> {
    let mut out = Vec::new();
    let mut open: Option<(usize, usize, String, Vec<String>, usize)> = None;
    for (i, raw) in markdown.lines().enumerate() {
        let trimmed = raw.trim_start();
        let indent = raw.len() - trimmed.len();
        let ticks = trimmed.chars().take_while(|c| *c == '`').count();
        match &mut open {
            None if ticks >= 3 => {
                let info = trimmed[ticks..].trim().to_owned();
                open = Some((ticks, indent, info, Vec::new(), i + 1));
            }
            None => {}
            Some((fence, _, _, _, _)) if ticks >= *fence && trimmed[ticks..].trim().is_empty() => {
                let (_, _, info, body, line) = open.take().expect("open block");
                out.push(Block {
                    info,
                    body: body.join("\n") + "\n",
                    line,
                });
            }
            Some((_, indent, _, body, _)) => {
                // A block inside a list item is indented; its lines lose that indentation.
                let cut = raw
                    .char_indices()
                    .take_while(|(n, c)| *n < *indent && *c == ' ')
                    .count();
                body.push(raw[cut..].to_owned());
            }
        }
    }
    match open {
        Some((_, _, _, _, line)) => Err(format!("the block opened on line {line} never closes")),
        None => Ok(out),
    }
}

/// What each block asks of the runner; an error names the block a guide cannot have.
pub fn steps(blocks: &[Block]) -> Result<Vec<Step>, String> {
    let mut out = Vec::new();
    for b in blocks {
        let mut words = b.info.split_whitespace();
        let lang = words.next().unwrap_or_default();
        let rest: Vec<&str> = words.collect();
        let step = match (lang, rest.as_slice()) {
            ("sh", []) => Step::Run {
                script: b.body.clone(),
                line: b.line,
            },
            ("yaml" | "ini" | "text", [file]) if file.starts_with("file=") => {
                let name = &file["file=".len()..];
                let relative = std::path::Path::new(name)
                    .components()
                    .all(|c| matches!(c, std::path::Component::Normal(_)));
                if name.is_empty() || !relative {
                    return Err(format!(
                        "line {}: file={name:?} must be a relative path without `..`",
                        b.line
                    ));
                }
                Step::Write {
                    file: name.to_owned(),
                    content: b.body.clone(),
                }
            }
            ("text", ["output"]) => {
                if !matches!(out.last(), Some(Step::Run { .. })) {
                    return Err(format!(
                        "line {}: a `text output` block must follow a `sh` block",
                        b.line
                    ));
                }
                Step::Expect {
                    lines: b
                        .body
                        .lines()
                        .filter(|l| !l.trim().is_empty())
                        .map(str::to_owned)
                        .collect(),
                    line: b.line,
                }
            }
            ("" | "yaml" | "text" | "json" | "ini" | "toml", []) => Step::Read,
            _ => {
                return Err(format!(
                    "line {}: a block `{}` is neither run nor read (see tests/common/guide.rs)",
                    b.line, b.info
                ));
            }
        };
        out.push(step);
    }
    Ok(out)
}

/// Whether `actual` (a line of output) matches `expected` word by word, `*` matching any word.
pub fn line_matches(expected: &str, actual: &str) -> bool {
    let e: Vec<&str> = expected.split_whitespace().collect();
    let a: Vec<&str> = actual.split_whitespace().collect();
    e.len() == a.len() && e.iter().zip(&a).all(|(e, a)| *e == "*" || e == a)
}

/// The kubectl the guides are run with: `$KUBECTL`, else the one on `PATH`, else Debian's
/// (extracted by `.ci/run`). The guides are written for today's kubectl (1.32).
pub fn kubectl() -> PathBuf {
    if let Some(k) = std::env::var_os("KUBECTL").filter(|v| !v.is_empty()) {
        let first = std::env::split_paths(&k)
            .next()
            .expect("KUBECTL names a file");
        assert!(first.is_file(), "KUBECTL names {}", first.display());
        return first;
    }
    let on_path = std::env::var_os("PATH").and_then(|p| {
        std::env::split_paths(&p)
            .map(|d| d.join("kubectl"))
            .find(|p| p.is_file())
    });
    let debian =
        Path::new(env!("CARGO_MANIFEST_DIR")).join("../../target/debian-kubectl/usr/bin/kubectl");
    on_path
        .or_else(|| debian.is_file().then_some(debian))
        .expect(
            "the guides are run with kubectl: put one on PATH, set KUBECTL, or run .ci/run \
             (which extracts Debian's into target/debian-kubectl)",
        )
}

/// A scratch directory where a guide runs, removed on drop.
pub struct Workdir {
    pub dir: PathBuf,
    bin: PathBuf,
    kubeconfig: PathBuf,
}

impl Workdir {
    /// A fresh directory with `manifests` linked, a `bin` of `csi-operator` and kubectl, and
    /// `kubeconfig` written for the guide's commands.
    pub fn new(name: &str, kubeconfig: &str) -> Self {
        static NEXT: std::sync::atomic::AtomicUsize = std::sync::atomic::AtomicUsize::new(0);
        let n = NEXT.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
        let dir = std::env::temp_dir().join(format!("guide-{name}-{}-{n}", std::process::id()));
        let bin = dir.join(".bin");
        std::fs::create_dir_all(&bin).expect("guide directory");
        let repo = Path::new(env!("CARGO_MANIFEST_DIR")).join("../..");
        std::os::unix::fs::symlink(
            std::fs::canonicalize(repo.join("manifests")).expect("manifests/"),
            dir.join("manifests"),
        )
        .expect("link manifests");
        std::os::unix::fs::symlink(env!("CARGO_BIN_EXE_csi-operator"), bin.join("csi-operator"))
            .expect("link csi-operator");
        std::os::unix::fs::symlink(kubectl(), bin.join("kubectl")).expect("link kubectl");
        let kubeconfig_path = dir.join(".kubeconfig");
        std::fs::write(&kubeconfig_path, kubeconfig).expect("kubeconfig");
        Self {
            dir,
            bin,
            kubeconfig: kubeconfig_path,
        }
    }

    /// Puts a file the user brings (their clouds.yaml, a CA) into the directory.
    /// `name` may have directories (`.config/openstack/clouds.yaml`, `HOME` being the
    /// directory).
    pub fn provide(&self, name: &str, content: &str) {
        let path = self.dir.join(name);
        if let Some(parent) = path.parent() {
            std::fs::create_dir_all(parent).expect("provided file's directory");
        }
        std::fs::write(path, content).expect("provided file");
    }

    /// Runs the guide `docs/<name>.md`, every step in order; panics naming the step that
    /// failed, with its output.
    pub fn run_guide(&self, name: &str) {
        let path = Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("../../docs")
            .join(format!("{name}.md"));
        let text =
            std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
        let steps = blocks(&text)
            .and_then(|b| steps(&b))
            .unwrap_or_else(|e| panic!("docs/{name}.md: {e}"));
        assert!(
            steps.iter().any(|s| matches!(s, Step::Run { .. })),
            "docs/{name}.md has no command to run"
        );
        let mut last_output = String::new();
        for step in steps {
            match step {
                Step::Run { script, line } => {
                    last_output = self.run(&script).unwrap_or_else(|out| {
                        panic!("docs/{name}.md, the block on line {line} failed:\n{script}\n--- its output ---\n{out}")
                    });
                    eprintln!("docs/{name}.md:{line} ok\n{last_output}");
                }
                Step::Write { file, content } => self.provide(&file, &content),
                Step::Expect { lines, line } => {
                    for want in &lines {
                        assert!(
                            last_output.lines().any(|got| line_matches(want, got)),
                            "docs/{name}.md, line {line}: the output has no line like {want:?}; it was:\n{last_output}"
                        );
                    }
                }
                Step::Read => {}
            }
        }
    }

    /// Runs one block; its combined output, or that output as the error when it fails.
    fn run(&self, script: &str) -> Result<String, String> {
        let path = format!(
            "{}:{}",
            self.bin.display(),
            std::env::var("PATH").unwrap_or_default()
        );
        let started = Instant::now();
        let out = Command::new("bash")
            .args(["-euo", "pipefail", "-c", script])
            .current_dir(&self.dir)
            .env("PATH", path)
            .env("KUBECONFIG", &self.kubeconfig)
            // `~` in a guide is the user's home: this directory (and kubectl's cache with it).
            .env("HOME", &self.dir)
            .env_remove("KUBECTL")
            .env("RUST_BACKTRACE", "0")
            .output()
            .expect("bash runs");
        let text = format!(
            "{}{}",
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        );
        let took = started.elapsed();
        if out.status.success() {
            Ok(text)
        } else {
            Err(format!("{text}\n({} after {took:?})", out.status))
        }
    }

    /// Runs a command as the test (not the guide) does, e.g. to look at the cluster after a
    /// guide; its output.
    pub fn sh(&self, script: &str) -> String {
        self.run(script).unwrap_or_else(|e| panic!("{script}\n{e}"))
    }

    /// Polls `script` until it succeeds, up to `deadline`; its output.
    pub fn sh_until(&self, script: &str, deadline: Duration) -> String {
        let until = Instant::now() + deadline;
        loop {
            match self.run(script) {
                Ok(out) => return out,
                Err(e) if Instant::now() >= until => panic!("{script} never succeeded: {e}"),
                Err(_) => std::thread::sleep(Duration::from_millis(250)),
            }
        }
    }
}

impl Drop for Workdir {
    fn drop(&mut self) {
        if !std::thread::panicking() {
            let _ = std::fs::remove_dir_all(&self.dir);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn blocks_in_lists_lose_their_indentation_and_unclosed_ones_are_refused() {
        let md = "# T\n\n1. Do:\n\n   ```sh\n   kubectl get pods\n   ```\n\n```yaml file=a.yaml\nkind: X\n```\n";
        let b = blocks(md).unwrap();
        assert_eq!(b.len(), 2);
        assert_eq!(b[0].info, "sh");
        assert_eq!(b[0].body, "kubectl get pods\n");
        assert_eq!(b[0].line, 5);
        assert_eq!(b[1].body, "kind: X\n");
        assert!(blocks("```sh\nls\n").unwrap_err().contains("line 1"));
    }

    #[test]
    fn unknown_blocks_and_orphan_outputs_are_refused() {
        let b = |info: &str| Block {
            info: info.into(),
            body: "x\n".into(),
            line: 3,
        };
        assert!(steps(&[b("bash")]).unwrap_err().contains("`bash`"));
        assert!(steps(&[b("sh no-run")]).is_err());
        assert!(steps(&[b("text output")]).unwrap_err().contains("follow"));
        assert!(steps(&[b("yaml file=../x")]).is_err());
        assert!(steps(&[b("yaml file=/etc/x")]).is_err());
        assert!(steps(&[b("yaml file=my-install/kustomization.yaml")]).is_ok());
        assert!(steps(&[b("yaml file=")]).is_err());
        assert_eq!(
            steps(&[b("sh"), b("text output")]).unwrap()[1],
            Step::Expect {
                lines: vec!["x".into()],
                line: 3
            }
        );
    }

    #[test]
    fn output_lines_match_word_by_word_with_wildcards() {
        assert!(line_matches(
            "pvc-1  Bound  *  1Gi",
            "pvc-1   Bound pvc-abc 1Gi"
        ));
        assert!(!line_matches("pvc-1 Bound", "pvc-1 Pending"));
        assert!(!line_matches("pvc-1 Bound", "pvc-1 Bound extra"));
    }
}
