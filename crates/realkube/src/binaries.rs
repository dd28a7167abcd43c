//! Finding the control plane's binaries the envtest way: `$KUBEBUILDER_ASSETS` first (a folder
//! with `etcd`, `kube-apiserver`, `kube-controller-manager`, `kube-scheduler` and
//! `cluster-version-operator`), else `$REALKUBE_BIN`, else `target/realkube/bin` of this
//! workspace, which `.ci/run` fills from `../shared/realkube/bin/*.xz` and which is filled here
//! the same way when the compressed copies sit beside the checkout. etcd may also come from
//! `PATH` (Debian's `etcd-server`). A missing binary is an error that says how to get it:
//! never a skipped test.

use std::path::{Path, PathBuf};
use std::process::Command;

/// The binaries of one control plane.
#[derive(Debug, Clone)]
pub struct Binaries {
    pub etcd: PathBuf,
    pub kube_apiserver: PathBuf,
    pub kube_controller_manager: PathBuf,
    pub kube_scheduler: PathBuf,
    pub cluster_version_operator: PathBuf,
}

/// A binary that cannot be found or unpacked.
#[derive(Debug, thiserror::Error)]
pub enum BinaryError {
    #[error(
        "the real control plane's {name} is missing (looked in {looked}). Run `bash .ci/run` once, \
         or unpack the binaries: `mkdir -p target/realkube/bin && for b in ../shared/realkube/bin/*.xz; \
         do xz -dc \"$b\" > target/realkube/bin/$(basename \"$b\" .xz); done && chmod +x target/realkube/bin/*`, \
         or set KUBEBUILDER_ASSETS to a folder that has it{etcd_hint}"
    )]
    Missing {
        name: &'static str,
        looked: String,
        etcd_hint: &'static str,
    },
    #[error("cannot unpack {from} into {to}: {reason}")]
    Unpack {
        from: PathBuf,
        to: PathBuf,
        reason: String,
    },
}

/// The workspace root (this crate is `crates/realkube`).
pub(crate) fn workspace_root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..")
}

/// `../shared/realkube` beside the checkout, or `$REALKUBE_FIXTURES`: the CRDs, SCCs and
/// compressed binaries.
pub(crate) fn fixtures_dir() -> PathBuf {
    std::env::var_os("REALKUBE_FIXTURES")
        .map(PathBuf::from)
        .unwrap_or_else(|| workspace_root().join("../shared/realkube"))
}

impl Binaries {
    /// Finds every binary, unpacking the compressed copies beside the checkout when needed.
    pub fn find() -> Result<Self, BinaryError> {
        let dirs = search_dirs();
        let control = |name: &'static str| find_control(name, &dirs);
        Ok(Self {
            etcd: find_etcd(&dirs)?,
            kube_apiserver: control("kube-apiserver")?,
            kube_controller_manager: control("kube-controller-manager")?,
            kube_scheduler: control("kube-scheduler")?,
            cluster_version_operator: control("cluster-version-operator")?,
        })
    }
}

fn search_dirs() -> Vec<PathBuf> {
    let mut dirs = Vec::new();
    for var in ["KUBEBUILDER_ASSETS", "REALKUBE_BIN"] {
        if let Some(d) = std::env::var_os(var).filter(|v| !v.is_empty()) {
            dirs.push(PathBuf::from(d));
        }
    }
    dirs.push(unpack_dir());
    dirs
}

fn unpack_dir() -> PathBuf {
    let target = std::env::var_os("CARGO_TARGET_DIR")
        .map(PathBuf::from)
        .unwrap_or_else(|| workspace_root().join("target"));
    target.join("realkube/bin")
}

fn looked(dirs: &[PathBuf]) -> String {
    dirs.iter()
        .map(|d| d.display().to_string())
        .collect::<Vec<_>>()
        .join(", ")
}

fn find_control(name: &'static str, dirs: &[PathBuf]) -> Result<PathBuf, BinaryError> {
    if let Some(found) = dirs.iter().map(|d| d.join(name)).find(|p| p.is_file()) {
        return Ok(found);
    }
    let packed = fixtures_dir().join("bin").join(format!("{name}.xz"));
    if packed.is_file() {
        return unpack(&packed, &unpack_dir().join(name));
    }
    Err(BinaryError::Missing {
        name,
        looked: format!("{} and {}", looked(dirs), packed.display()),
        etcd_hint: "",
    })
}

fn find_etcd(dirs: &[PathBuf]) -> Result<PathBuf, BinaryError> {
    let path_dirs = std::env::var_os("PATH")
        .map(|p| std::env::split_paths(&p).collect::<Vec<_>>())
        .unwrap_or_default();
    dirs.iter()
        .chain(path_dirs.iter())
        .map(|d| d.join("etcd"))
        .find(|p| p.is_file())
        .ok_or_else(|| BinaryError::Missing {
            name: "etcd",
            looked: format!("{} and PATH", looked(dirs)),
            etcd_hint: "; etcd is Debian's package: `apt-get install -y etcd-server`",
        })
}

/// Unpacks `from` (xz) into `to` atomically: tests in parallel processes may race here, and a
/// half-written binary must never be run.
fn unpack(from: &Path, to: &Path) -> Result<PathBuf, BinaryError> {
    let fail = |reason: String| BinaryError::Unpack {
        from: from.to_owned(),
        to: to.to_owned(),
        reason,
    };
    let dir = to.parent().ok_or_else(|| fail("no parent folder".into()))?;
    std::fs::create_dir_all(dir).map_err(|e| fail(e.to_string()))?;
    let partial = dir.join(format!(
        ".{}.{}",
        to.file_name().unwrap_or_default().to_string_lossy(),
        std::process::id()
    ));
    let file = std::fs::File::create(&partial).map_err(|e| fail(e.to_string()))?;
    let status = Command::new("xz")
        .arg("-dc")
        .arg(from)
        .stdout(file)
        .status()
        .map_err(|e| fail(format!("xz: {e} (apt-get install -y xz-utils)")))?;
    if !status.success() {
        let _ = std::fs::remove_file(&partial);
        return Err(fail(format!("xz exited with {status}")));
    }
    use std::os::unix::fs::PermissionsExt;
    std::fs::set_permissions(&partial, std::fs::Permissions::from_mode(0o755))
        .map_err(|e| fail(e.to_string()))?;
    std::fs::rename(&partial, to).map_err(|e| fail(e.to_string()))?;
    Ok(to.to_owned())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_missing_binary_says_how_to_get_it() {
        let err = find_control("no-such-binary", &[PathBuf::from("/nonexistent")]).unwrap_err();
        let text = err.to_string();
        assert!(text.contains("no-such-binary"), "{text}");
        assert!(text.contains("KUBEBUILDER_ASSETS"), "{text}");
        assert!(text.contains(".ci/run"), "{text}");
    }

    #[test]
    fn a_corrupt_archive_is_refused_and_leaves_nothing() {
        let dir = std::env::temp_dir().join(format!("realkube-unpack-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let packed = dir.join("bad.xz");
        std::fs::write(&packed, b"not xz").unwrap();
        let to = dir.join("out/bad");
        assert!(unpack(&packed, &to).is_err());
        assert!(!to.exists());
        let leftovers = std::fs::read_dir(dir.join("out")).unwrap().count();
        assert_eq!(leftovers, 0);
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
