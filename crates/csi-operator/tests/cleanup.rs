//! `csi-operator cleanup` as a process against openstack-sim seeded with what a destroyed
//! cluster leaves behind: the dry-run listing is compared byte for byte with the reviewed
//! golden file `tests/golden/cleanup-dry-run.txt` (regenerate with
//! `UPDATE_GOLDEN=1 cargo test -p csi-operator --test cleanup`, then review), `--yes` deletes
//! in the order OpenStack accepts and only what carries the exact tag and is not attached, a
//! refused delete is reported while the others proceed (non-zero exit), a second run finds
//! nothing, and malformed input fails with a clear message and no secret in any output.

use std::path::PathBuf;
use std::process::Output;

use openstack_sim::{
    DEFAULT_PASSWORD, Fault, OpenStackSim, SimAccessRule, SimConfig, SimShare, SimShareSnapshot,
    SimStorage, SimVolume, SimVolumeSnapshot,
};

const CLUSTER: &str = "ostest-x7k2p";
const CINDER_KEY: &str = "cinder.csi.openstack.org/cluster";
const MANILA_KEY: &str = "manila.csi.openstack.org/cluster";

async fn sim() -> OpenStackSim {
    OpenStackSim::start(SimConfig::default(), "127.0.0.1:0".parse().expect("addr"))
        .await
        .expect("sim starts")
}

/// What a destroyed cluster leaves, plus what is not its own.
fn leftovers() -> SimStorage {
    SimStorage {
        volumes: vec![
            SimVolume::new("vol-1", "pvc-0a1b").with_metadata(CINDER_KEY, CLUSTER),
            SimVolume::new("vol-2", "pvc-2c3d").with_metadata(CINDER_KEY, CLUSTER),
            SimVolume::new("vol-attached", "pvc-4e5f")
                .with_metadata(CINDER_KEY, CLUSTER)
                .attached_to("srv-worker-0"),
            SimVolume::new("vol-foreign-snap", "pvc-6a7b").with_metadata(CINDER_KEY, CLUSTER),
            SimVolume::new("vol-other-cluster", "pvc-other").with_metadata(CINDER_KEY, "other"),
            SimVolume::new("vol-untagged", "database"),
            SimVolume::new("vol-near-miss", "pvc-near").with_metadata(CINDER_KEY, "OSTEST-X7K2P"),
        ],
        volume_snapshots: vec![
            SimVolumeSnapshot::new("snap-1", "snapshot-9f8e", "vol-1")
                .with_metadata(CINDER_KEY, CLUSTER),
            SimVolumeSnapshot::new("snap-manual", "before-upgrade", "vol-foreign-snap"),
        ],
        shares: vec![
            SimShare::new("share-1", "pvc-share-1").with_metadata(MANILA_KEY, CLUSTER),
            SimShare::new("share-untagged", "team-files"),
        ],
        share_snapshots: vec![
            SimShareSnapshot::new("ssnap-1", "snapshot-share-1", "share-1"),
            SimShareSnapshot::new("ssnap-untagged", "keep", "share-untagged"),
        ],
        access_rules: vec![
            SimAccessRule::new("rule-1", "share-1", "10.0.0.0/16"),
            SimAccessRule::new("rule-untagged", "share-untagged", "10.1.0.0/16"),
        ],
    }
}

fn clouds_file(sim: &OpenStackSim, tag: &str) -> PathBuf {
    let path = std::env::temp_dir().join(format!(
        "cleanup-clouds-{}-{tag}-{}.yaml",
        std::process::id(),
        sim.addr().port()
    ));
    std::fs::write(&path, sim.clouds_yaml("openstack")).expect("write clouds.yaml");
    path
}

/// Runs the binary off the runtime's worker threads, so the in-process simulator keeps
/// serving while the child waits for it.
async fn cleanup(args: Vec<String>) -> Output {
    tokio::task::spawn_blocking(move || {
        std::process::Command::new(env!("CARGO_BIN_EXE_csi-operator"))
            .arg("cleanup")
            .args(args)
            .env_clear()
            .output()
            .expect("csi-operator runs")
    })
    .await
    .expect("joined")
}

fn args(clouds: &std::path::Path, extra: &[&str]) -> Vec<String> {
    let mut a = vec![
        "--cluster-id".to_string(),
        CLUSTER.to_string(),
        "--clouds".to_string(),
        clouds.to_string_lossy().into_owned(),
    ];
    a.extend(extra.iter().map(|s| s.to_string()));
    a
}

fn text(out: &[u8]) -> String {
    String::from_utf8_lossy(out).into_owned()
}

fn assert_no_secret(out: &Output) {
    for stream in [&out.stdout, &out.stderr] {
        assert!(
            !text(stream).contains(DEFAULT_PASSWORD),
            "the password leaked: {}",
            text(stream)
        );
    }
}

fn ids<T>(items: &[T], id: impl Fn(&T) -> &str) -> Vec<String> {
    items.iter().map(|i| id(i).to_string()).collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn dry_run_lists_exactly_what_would_go_and_deletes_nothing() {
    let sim = sim().await;
    sim.set_storage(leftovers());
    let clouds = clouds_file(&sim, "dry");
    let out = cleanup(args(&clouds, &[])).await;
    assert!(out.status.success(), "{}", text(&out.stderr));
    assert_no_secret(&out);
    let golden = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/golden/cleanup-dry-run.txt");
    let got = text(&out.stdout);
    if std::env::var_os("UPDATE_GOLDEN").is_some() {
        std::fs::write(&golden, &got).expect("write golden");
    }
    let want = std::fs::read_to_string(&golden).expect("golden file");
    assert_eq!(
        got,
        want,
        "dry-run output differs from {}",
        golden.display()
    );
    assert_eq!(sim.storage(), leftovers(), "a dry run deletes nothing");
    assert!(
        sim.requests().iter().all(|r| r.method != "DELETE"),
        "no DELETE in a dry run"
    );
    let _ = std::fs::remove_file(clouds);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn yes_deletes_in_order_refuses_the_rest_and_a_rerun_finds_nothing() {
    let sim = sim().await;
    sim.set_storage(leftovers());
    let clouds = clouds_file(&sim, "yes");
    let out = cleanup(args(&clouds, &["--yes"])).await;
    assert!(out.status.success(), "{}", text(&out.stderr));
    assert_no_secret(&out);
    let stdout = text(&out.stdout);
    assert!(
        stdout.contains("Deleted 6, skipped 2, failed 0."),
        "{stdout}"
    );
    assert!(
        stdout.contains("attached to server srv-worker-0 (status in-use)"),
        "{stdout}"
    );
    assert!(
        stdout.contains("has snapshots not tagged for this cluster: snap-manual"),
        "{stdout}"
    );
    let stderr = text(&out.stderr);
    assert!(
        stderr.contains("[1/6] deleting volume snapshot snap-1"),
        "progress on stderr: {stderr}"
    );

    // What is left: everything untagged, another cluster's, a near-miss tag, attached, or
    // holding someone else's snapshot.
    let left = sim.storage();
    assert_eq!(
        ids(&left.volumes, |v| &v.id),
        [
            "vol-attached",
            "vol-foreign-snap",
            "vol-other-cluster",
            "vol-untagged",
            "vol-near-miss"
        ]
    );
    assert_eq!(ids(&left.volume_snapshots, |s| &s.id), ["snap-manual"]);
    assert_eq!(ids(&left.shares, |s| &s.id), ["share-untagged"]);
    assert_eq!(ids(&left.share_snapshots, |s| &s.id), ["ssnap-untagged"]);
    assert_eq!(ids(&left.access_rules, |r| &r.id), ["rule-untagged"]);

    // The order OpenStack needs: each snapshot before its volume, rules and snapshots before
    // their share.
    let deletes: Vec<String> = sim
        .requests()
        .into_iter()
        .filter(|r| r.method == "DELETE" || r.path.ends_with("/action"))
        .filter(|r| r.status == 202)
        .map(|r| r.path.rsplit('/').take(2).collect::<Vec<_>>().join("<"))
        .collect();
    let at = |needle: &str| {
        deletes
            .iter()
            .position(|d| d == needle)
            .unwrap_or_else(|| panic!("{needle} deleted: {deletes:?}"))
    };
    assert!(at("snap-1<snapshots") < at("vol-1<volumes"), "{deletes:?}");
    assert!(
        at("action<share-1") < at("share-1<shares"),
        "rule first: {deletes:?}"
    );
    assert!(
        at("ssnap-1<snapshots") < at("share-1<shares"),
        "{deletes:?}"
    );

    // Idempotent: the second run deletes nothing and reports only what it still refuses.
    sim.clear_requests();
    let again = cleanup(args(&clouds, &["--yes"])).await;
    assert!(again.status.success(), "{}", text(&again.stderr));
    let stdout = text(&again.stdout);
    assert!(
        stdout.contains("Deleted 0, skipped 2, failed 0."),
        "{stdout}"
    );
    assert!(sim.requests().iter().all(|r| r.method != "DELETE"));
    assert_eq!(sim.storage(), left);
    let _ = std::fs::remove_file(clouds);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_refused_delete_is_reported_and_the_others_proceed() {
    let sim = sim().await;
    sim.set_storage(SimStorage {
        volumes: vec![
            SimVolume::new("vol-a", "a").with_metadata(CINDER_KEY, CLUSTER),
            SimVolume::new("vol-b", "b").with_metadata(CINDER_KEY, CLUSTER),
            SimVolume::new("vol-c", "c").with_metadata(CINDER_KEY, CLUSTER),
        ],
        shares: vec![SimShare::new("share-a", "sa").with_metadata(MANILA_KEY, CLUSTER)],
        share_snapshots: vec![SimShareSnapshot::new("ssnap-a", "s", "share-a")],
        ..SimStorage::default()
    });
    // Cinder refuses vol-b (say a backend lock); Manila refuses the share's snapshot, so the
    // share itself must not be tried.
    sim.inject(
        Fault::status(409)
            .on_path("/public/volume/v3/p-demo/volumes/vol-b")
            .times(1),
    );
    sim.inject(
        Fault::status(500)
            .on_path("/public/share/v2/snapshots/ssnap-a")
            .times(1),
    );
    let clouds = clouds_file(&sim, "partial");
    let out = cleanup(args(&clouds, &["--yes"])).await;
    assert!(!out.status.success(), "a failed delete is a failed run");
    assert_no_secret(&out);
    let stdout = text(&out.stdout);
    assert!(
        stdout.contains("Deleted 2, skipped 1, failed 2."),
        "{stdout}"
    );
    assert!(
        stdout
            .lines()
            .any(|l| l.starts_with("failed") && l.contains("vol-b") && l.contains("409")),
        "{stdout}"
    );
    assert!(
        stdout.lines().any(|l| l.starts_with("skipped")
            && l.contains("share-a")
            && l.contains("its share snapshot ssnap-a was not removed")),
        "{stdout}"
    );
    assert!(
        text(&out.stderr).contains("2 deletion(s) failed"),
        "{}",
        text(&out.stderr)
    );
    let left = sim.storage();
    assert_eq!(ids(&left.volumes, |v| &v.id), ["vol-b"]);
    assert_eq!(ids(&left.shares, |s| &s.id), ["share-a"]);

    // Once the cloud accepts it, a re-run finishes the job.
    let again = cleanup(args(&clouds, &["--yes"])).await;
    assert!(again.status.success(), "{}", text(&again.stderr));
    assert!(text(&again.stdout).contains("Deleted 3, skipped 0, failed 0."));
    assert_eq!(sim.storage(), SimStorage::default());
    let _ = std::fs::remove_file(clouds);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn malformed_input_and_bad_arguments_fail_clearly() {
    let dir = std::env::temp_dir();
    let pid = std::process::id();

    // No such file.
    let missing = dir.join(format!("cleanup-missing-{pid}.yaml"));
    let out = cleanup(args(&missing, &[])).await;
    assert!(!out.status.success());
    assert!(
        text(&out.stderr).contains("cannot read --clouds"),
        "{}",
        text(&out.stderr)
    );

    // Not YAML, no clouds, wrong cloud name; the password must not be echoed.
    let cases: &[(&str, &str, &[&str])] = &[
        (
            "clouds: [unclosed\n  password: hunter2-secret",
            "not a valid clouds.yaml",
            &[],
        ),
        ("other: {}\n", "no top-level `clouds:`", &[]),
        (
            "clouds:\n  openstack:\n    auth:\n      auth_url: http://127.0.0.1:9/v3\n      username: u\n      password: hunter2-secret\n      project_name: p\n",
            "mycloud",
            &["--cloud", "mycloud"],
        ),
    ];
    for (i, (body, needle, extra)) in cases.iter().enumerate() {
        let path = dir.join(format!("cleanup-bad-{pid}-{i}.yaml"));
        std::fs::write(&path, body).expect("write");
        let out = cleanup(args(&path, extra)).await;
        let err = text(&out.stderr);
        assert!(!out.status.success(), "case {i}");
        assert!(err.contains(needle), "case {i}: {err}");
        assert!(!err.contains("hunter2-secret"), "case {i} leaked: {err}");
        let _ = std::fs::remove_file(path);
    }

    // Arguments.
    let out = cleanup(vec!["--clouds".into(), "x.yaml".into()]).await;
    assert!(!out.status.success());
    assert!(
        text(&out.stderr).contains("--cluster-id"),
        "{}",
        text(&out.stderr)
    );
    for bad in ["", " ostest", "ostest\n"] {
        let out = cleanup(vec![
            "--cluster-id".into(),
            bad.into(),
            "--clouds".into(),
            "x.yaml".into(),
        ])
        .await;
        assert!(!out.status.success(), "{bad:?}");
        assert!(
            text(&out.stderr).contains("--cluster-id"),
            "{bad:?}: {}",
            text(&out.stderr)
        );
    }
    let out = cleanup(vec![
        "--cluster-id".into(),
        CLUSTER.into(),
        "--clouds".into(),
        "x.yaml".into(),
        "--wait-timeout".into(),
        "soon".into(),
    ])
    .await;
    assert!(!out.status.success());
    assert!(
        text(&out.stderr).contains("--wait-timeout"),
        "{}",
        text(&out.stderr)
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn rejected_credentials_are_an_error_without_the_password() {
    let sim = sim().await;
    sim.set_storage(leftovers());
    let path = std::env::temp_dir().join(format!(
        "cleanup-wrongpw-{}-{}.yaml",
        std::process::id(),
        sim.addr().port()
    ));
    std::fs::write(
        &path,
        sim.clouds_yaml_password("openstack", "admin", "wrong-hunter2"),
    )
    .expect("write");
    let out = cleanup(args(&path, &["--yes"])).await;
    assert!(!out.status.success());
    let err = text(&out.stderr);
    assert!(err.contains("rejected"), "{err}");
    assert!(!err.contains("wrong-hunter2") && !text(&out.stdout).contains("wrong-hunter2"));
    assert_eq!(sim.storage(), leftovers());
    let _ = std::fs::remove_file(path);
}
