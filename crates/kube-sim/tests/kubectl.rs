//! kubectl against kube-sim: an independent client we did not write checks that kube-sim's
//! discovery, OpenAPI, apply, patch, watch, wait and deletion behave like a real API server.
//!
//! Every scenario runs against each kubectl found, with a fresh kube-sim per binary, because
//! kubectl versions take different paths through the server (v1.20 validates on the client from
//! OpenAPI v2; v1.33 asks the server for strict field validation and reads OpenAPI v3).
//!
//! Which kubectl: `KUBECTL` (colon-separated paths) or, when it is unset, Debian's
//! `target/debian-kubectl/usr/bin/kubectl` (extracted by `.ci/run`) and the `kubectl` on PATH.
//! Finding none fails every test with instructions, unless `KUBE_SIM_SKIP_KUBECTL=1`.

use std::io::Read;
use std::panic::{AssertUnwindSafe, catch_unwind};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use kube_sim::api::{PatchType, WriteOptions};
use kube_sim::{KubeSim, RequestRecord, SimConfig};
use serde_json::{Value, json};

/// A kubectl that runs longer than this is killed: nothing here should take more than seconds.
const KUBECTL_TIMEOUT: Duration = Duration::from_secs(60);
/// How long to poll for something to happen before failing; generous for a loaded machine.
const DEADLINE: Duration = Duration::from_secs(20);

// ----- finding kubectl ---------------------------------------------------------------------

fn workspace_root() -> PathBuf {
    let manifest_dir = Path::new(env!("CARGO_MANIFEST_DIR"));
    manifest_dir
        .ancestors()
        .nth(2)
        .unwrap_or(manifest_dir)
        .to_path_buf()
}

fn on_path(name: &str) -> Option<PathBuf> {
    let path = std::env::var_os("PATH")?;
    std::env::split_paths(&path)
        .map(|dir| dir.join(name))
        .find(|p| p.is_file())
}

/// The kubectl binaries to test with; empty means "skip" (only when asked to).
fn kubectl_binaries() -> Vec<PathBuf> {
    if std::env::var("KUBE_SIM_SKIP_KUBECTL").is_ok_and(|v| v == "1") {
        eprintln!("KUBE_SIM_SKIP_KUBECTL=1: skipping the kubectl tests");
        return Vec::new();
    }
    if let Some(list) = std::env::var_os("KUBECTL").filter(|v| !v.is_empty()) {
        let paths: Vec<PathBuf> = std::env::split_paths(&list)
            .filter(|p| !p.as_os_str().is_empty())
            .collect();
        for p in &paths {
            assert!(
                p.is_file(),
                "KUBECTL names {}, which is not a file",
                p.display()
            );
        }
        assert!(!paths.is_empty(), "KUBECTL is set but names no file");
        return paths;
    }
    let mut found: Vec<PathBuf> = Vec::new();
    let debian = workspace_root().join("target/debian-kubectl/usr/bin/kubectl");
    if debian.is_file() {
        found.push(debian);
    }
    let system = on_path("kubectl")
        .or_else(|| Some(PathBuf::from("/usr/bin/kubectl")).filter(|p| p.is_file()));
    if let Some(system) = system {
        let canonical = |p: &Path| std::fs::canonicalize(p).unwrap_or_else(|_| p.to_path_buf());
        if !found.iter().any(|f| canonical(f) == canonical(&system)) {
            found.push(system);
        }
    }
    assert!(
        !found.is_empty(),
        "no kubectl found. These tests need one: run `bash .ci/run`, which extracts Debian's \
         kubectl into target/debian-kubectl, or do it by hand from the workspace root: \
         `apt-get download kubernetes-client && dpkg -x kubernetes-client_*.deb target/debian-kubectl`; \
         or set KUBECTL=/path/to/kubectl[:/another/kubectl]. \
         Set KUBE_SIM_SKIP_KUBECTL=1 to skip these tests."
    );
    found
}

/// Runs `scenario` once per kubectl, each against a fresh kube-sim, and fails naming every
/// kubectl it failed with (running all of them first, so one report covers both versions).
fn each_kubectl(scenario: impl Fn(&Harness)) {
    each_kubectl_with(SimConfig::default, scenario);
}

/// [`each_kubectl`] with kube-sims made from `config` (e.g. HTTPS).
fn each_kubectl_with(config: impl Fn() -> SimConfig, scenario: impl Fn(&Harness)) {
    let mut failed = Vec::new();
    for kubectl in kubectl_binaries() {
        let harness = Harness::start(kubectl, config());
        eprintln!("=== with {}", harness.label);
        if catch_unwind(AssertUnwindSafe(|| scenario(&harness))).is_err() {
            failed.push(harness.label.clone());
        }
    }
    assert!(failed.is_empty(), "failed with: {}", failed.join("; "));
}

// ----- running kubectl ---------------------------------------------------------------------

/// What a finished kubectl printed and how it exited.
struct Output {
    /// `None` when it was killed (by a signal or our timeout).
    code: Option<i32>,
    stdout: String,
    stderr: String,
}

impl std::fmt::Display for Output {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "exit code {:?}\n--- stdout:\n{}\n--- stderr:\n{}",
            self.code, self.stdout, self.stderr
        )
    }
}

/// A kubectl process still running, with its output collected as it comes.
struct Running {
    child: Child,
    args: String,
    stdout: Arc<Mutex<Vec<u8>>>,
    stderr: Arc<Mutex<Vec<u8>>>,
    readers: Vec<JoinHandle<()>>,
}

fn collect(mut from: impl Read + Send + 'static, into: Arc<Mutex<Vec<u8>>>) -> JoinHandle<()> {
    std::thread::spawn(move || {
        let mut buf = [0u8; 8192];
        while let Ok(n) = from.read(&mut buf) {
            if n == 0 {
                break;
            }
            into.lock()
                .unwrap_or_else(std::sync::PoisonError::into_inner)
                .extend_from_slice(&buf[..n]);
        }
    })
}

fn text(buf: &Mutex<Vec<u8>>) -> String {
    String::from_utf8_lossy(
        &buf.lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner),
    )
    .into_owned()
}

impl Running {
    fn stdout(&self) -> String {
        text(&self.stdout)
    }

    fn is_running(&mut self) -> bool {
        matches!(self.child.try_wait(), Ok(None))
    }

    /// Polls until the output so far satisfies `done`.
    fn wait_for_stdout(&mut self, what: &str, done: impl Fn(&str) -> bool) {
        let start = Instant::now();
        loop {
            if done(&self.stdout()) {
                return;
            }
            if !self.is_running() || start.elapsed() > DEADLINE {
                // One last look: the process may have printed it just before exiting.
                if done(&self.stdout()) {
                    return;
                }
                let out = self.finish();
                panic!("`kubectl {}`: never printed {what}; {out}", self.args);
            }
            std::thread::sleep(Duration::from_millis(20));
        }
    }

    /// Waits for the process to exit (killing it after `KUBECTL_TIMEOUT`).
    fn finish(&mut self) -> Output {
        let start = Instant::now();
        let code = loop {
            match self.child.try_wait() {
                Ok(Some(status)) => break status.code(),
                Ok(None) if start.elapsed() < KUBECTL_TIMEOUT => {
                    std::thread::sleep(Duration::from_millis(20))
                }
                _ => {
                    let _ = self.child.kill();
                    break self.child.wait().ok().and_then(|s| s.code());
                }
            }
        };
        for reader in self.readers.drain(..) {
            let _ = reader.join();
        }
        Output {
            code,
            stdout: text(&self.stdout),
            stderr: text(&self.stderr),
        }
    }
}

impl Drop for Running {
    fn drop(&mut self) {
        if self.is_running() {
            let _ = self.child.kill();
            let _ = self.child.wait();
        }
    }
}

// ----- one kube-sim and one kubectl --------------------------------------------------------

static NEXT_DIR: AtomicUsize = AtomicUsize::new(0);

/// A kube-sim on a free port, a kubeconfig for it, and the kubectl to drive it with.
struct Harness {
    // Declared before the runtime so it is dropped while the runtime still runs its tasks.
    sim: KubeSim,
    _runtime: tokio::runtime::Runtime,
    kubectl: PathBuf,
    label: String,
    /// The client's minor version (20 for v1.20.2), 0 when unknown.
    minor: u32,
    dir: PathBuf,
    kubeconfig: PathBuf,
}

impl Harness {
    fn start(kubectl: PathBuf, config: SimConfig) -> Self {
        let runtime = tokio::runtime::Builder::new_multi_thread()
            .worker_threads(2)
            .enable_all()
            .build()
            .expect("tokio runtime");
        let sim = runtime
            .block_on(KubeSim::start(
                config,
                "127.0.0.1:0".parse().expect("address"),
            ))
            .expect("kube-sim starts");
        let dir = std::env::temp_dir().join(format!(
            "kube-sim-kubectl-{}-{}",
            std::process::id(),
            NEXT_DIR.fetch_add(1, Ordering::Relaxed)
        ));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).expect("temp dir");
        let kubeconfig = dir.join("kubeconfig");
        std::fs::write(&kubeconfig, sim.kubeconfig("admin")).expect("write kubeconfig");
        let mut harness = Self {
            sim,
            _runtime: runtime,
            label: kubectl.display().to_string(),
            minor: 0,
            kubectl,
            dir,
            kubeconfig,
        };
        let version = harness.kubectl(&["version", "--client", "-o", "json"]);
        let version: Value = serde_json::from_str(&version.stdout).unwrap_or_default();
        if let Some(v) = version
            .pointer("/clientVersion/gitVersion")
            .and_then(Value::as_str)
        {
            harness.label = format!("{} ({v})", harness.label);
            harness.minor = v
                .split('.')
                .nth(1)
                .and_then(|m| m.parse().ok())
                .unwrap_or(0);
        }
        harness
    }

    fn spawn(&self, args: &[&str]) -> Running {
        let mut child = Command::new(&self.kubectl)
            .arg("--kubeconfig")
            .arg(&self.kubeconfig)
            // A private discovery cache and HOME: nothing leaks between tests or from the user.
            .arg("--cache-dir")
            .arg(self.dir.join("cache"))
            .args(args)
            .env_remove("KUBECONFIG")
            .env("HOME", &self.dir)
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap_or_else(|e| panic!("cannot run {}: {e}", self.kubectl.display()));
        let stdout = Arc::new(Mutex::new(Vec::new()));
        let stderr = Arc::new(Mutex::new(Vec::new()));
        let mut readers = Vec::new();
        if let Some(out) = child.stdout.take() {
            readers.push(collect(out, stdout.clone()));
        }
        if let Some(err) = child.stderr.take() {
            readers.push(collect(err, stderr.clone()));
        }
        Running {
            child,
            args: args.join(" "),
            stdout,
            stderr,
            readers,
        }
    }

    fn kubectl(&self, args: &[&str]) -> Output {
        self.spawn(args).finish()
    }

    /// Runs kubectl, expecting success; returns its stdout.
    fn ok(&self, args: &[&str]) -> String {
        let out = self.kubectl(args);
        assert_eq!(
            out.code,
            Some(0),
            "`kubectl {}` failed: {out}",
            args.join(" ")
        );
        out.stdout
    }

    /// Runs kubectl, expecting it to fail (not to be killed).
    fn fails(&self, args: &[&str]) -> Output {
        let out = self.kubectl(args);
        assert!(
            matches!(out.code, Some(c) if c != 0),
            "`kubectl {}` should have failed: {out}",
            args.join(" ")
        );
        out
    }

    /// Writes a file for `kubectl -f` into this test's directory.
    fn file(&self, name: &str, contents: &str) -> String {
        let path = self.dir.join(name);
        std::fs::write(&path, contents).expect("write test file");
        path.display().to_string()
    }

    /// An object as kube-sim stores it, or `None`.
    fn object(
        &self,
        group: &str,
        version: &str,
        plural: &str,
        namespace: &str,
        name: &str,
    ) -> Option<Value> {
        let cluster = self.sim.cluster();
        let rt = cluster.resource(group, version, plural)?;
        cluster.get(&rt, namespace, name).ok()
    }

    fn configmap(&self, namespace: &str, name: &str) -> Option<Value> {
        self.object("", "v1", "configmaps", namespace, name)
    }

    /// Requests kubectl made (as opposed to kube-sim's own controllers).
    fn kubectl_requests(&self) -> Vec<RequestRecord> {
        self.sim
            .requests()
            .into_iter()
            .filter(|r| r.user_agent.starts_with("kubectl"))
            .collect()
    }

    /// Writes a custom resource's status as its controller would.
    fn set_status(&self, group: &str, version: &str, plural: &str, name: &str, status: Value) {
        let body = serde_json::to_vec(&json!({ "status": status })).expect("json");
        let opts = WriteOptions {
            manager: "widget-controller".into(),
            ..Default::default()
        };
        self.sim
            .write(|c| {
                let rt = c
                    .resource(group, version, plural)
                    .ok_or_else(|| format!("{plural} not served"))?;
                c.patch(
                    &rt,
                    "default",
                    name,
                    Some("status"),
                    PatchType::Merge,
                    &body,
                    &opts,
                )
                .map_err(|e| format!("{e:?}"))
            })
            .unwrap_or_else(|e| panic!("status write failed: {e}"));
    }

    /// Writes a core object's status as its controller would.
    fn write_status(&self, plural: &str, namespace: &str, name: &str, status: Value) {
        let body = serde_json::to_vec(&json!({ "status": status })).expect("json");
        let opts = WriteOptions {
            manager: "kube-controller-manager".into(),
            ..Default::default()
        };
        self.sim
            .write(|c| {
                let rt = c
                    .resource("", "v1", plural)
                    .ok_or_else(|| format!("{plural} not served"))?;
                c.patch(
                    &rt,
                    namespace,
                    name,
                    Some("status"),
                    PatchType::Merge,
                    &body,
                    &opts,
                )
                .map_err(|e| format!("{e:?}"))
            })
            .unwrap_or_else(|e| panic!("status write failed: {e}"));
    }

    /// Installs the Widget CRD and waits for it to be served, as a user would.
    fn install_widgets(&self) {
        let out = self.ok(&["apply", "-f", &fixture("widgets-crd.yaml")]);
        assert!(
            out.contains(
                "customresourcedefinition.apiextensions.k8s.io/widgets.example.com created"
            ),
            "{out}"
        );
        let out = self.ok(&[
            "wait",
            "--for",
            "condition=established",
            "--timeout=60s",
            "crd/widgets.example.com",
        ]);
        assert!(out.contains("condition met"), "{out}");
    }
}

impl Drop for Harness {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.dir);
    }
}

fn fixture(name: &str) -> String {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/fixtures")
        .join(name)
        .display()
        .to_string()
}

/// Polls `probe` until it yields a value, failing with `what` after `DEADLINE`.
fn eventually<T>(what: &str, mut probe: impl FnMut() -> Option<T>) -> T {
    let start = Instant::now();
    loop {
        if let Some(v) = probe() {
            return v;
        }
        assert!(start.elapsed() < DEADLINE, "timed out waiting until {what}");
        std::thread::sleep(Duration::from_millis(20));
    }
}

/// A ConfigMap manifest; `extra` lines go under `data`.
fn configmap_yaml(name: &str, mode: &str, extra: &str) -> String {
    format!(
        "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: {name}\ndata:\n  mode: {mode}\n{extra}"
    )
}

fn data(obj: &Value) -> Value {
    obj.get("data").cloned().unwrap_or(Value::Null)
}

/// The whitespace-separated cells of the table line that starts with `first`.
fn table_row(table: &str, first: &str) -> Vec<String> {
    table
        .lines()
        .map(|l| l.split_whitespace().map(str::to_string).collect::<Vec<_>>())
        .find(|cells| cells.first().is_some_and(|c| c == first))
        .unwrap_or_else(|| panic!("no row starting with {first:?} in:\n{table}"))
}

// ----- scenarios ---------------------------------------------------------------------------

#[test]
fn apply_creates_then_configures_then_leaves_unchanged() {
    each_kubectl(|k| {
        let v1 = k.file(
            "v1.yaml",
            &configmap_yaml("settings", "fast", "  extra: yes-please\n"),
        );
        let out = k.ok(&["apply", "-f", &v1]);
        assert!(out.contains("configmap/settings created"), "{out}");
        let cm = k.configmap("default", "settings").expect("created");
        assert_eq!(data(&cm), json!({"mode": "fast", "extra": "yes-please"}));
        let last_applied = cm
            .pointer("/metadata/annotations/kubectl.kubernetes.io~1last-applied-configuration")
            .and_then(Value::as_str)
            .unwrap_or_default();
        assert!(
            last_applied.contains("\"mode\":\"fast\""),
            "last-applied annotation: {last_applied:?}"
        );

        // Dropping a key from the file removes it from the object: the three-way merge works
        // from the last-applied annotation the server kept.
        let v2 = k.file("v2.yaml", &configmap_yaml("settings", "safe", ""));
        let out = k.ok(&["apply", "-f", &v2]);
        assert!(out.contains("configmap/settings configured"), "{out}");
        assert_eq!(
            data(&k.configmap("default", "settings").expect("still there")),
            json!({"mode": "safe"})
        );
        let patches = k
            .kubectl_requests()
            .iter()
            .filter(|r| r.verb == "patch" && r.name == "settings")
            .count();
        assert_eq!(patches, 1, "the change is sent as one patch");

        let writes_before = k.kubectl_requests().iter().filter(|r| r.is_write()).count();
        let out = k.ok(&["apply", "-f", &v2]);
        assert!(out.contains("configmap/settings unchanged"), "{out}");
        assert_eq!(
            k.kubectl_requests().iter().filter(|r| r.is_write()).count(),
            writes_before,
            "an unchanged apply writes nothing"
        );
    });
}

/// kube-sim's "done when" check: kubectl applies a Deployment, a CRD and an object of that CRD.
#[test]
fn apply_deployment_crd_and_custom_resource() {
    each_kubectl(|k| {
        let out = k.ok(&["apply", "-f", &fixture("deployment.yaml")]);
        assert!(out.contains("deployment.apps/web created"), "{out}");
        k.install_widgets();
        let out = k.ok(&["apply", "-f", &fixture("widget.yaml")]);
        assert!(out.contains("widget.example.com/blue created"), "{out}");

        let deployment = k
            .object("apps", "v1", "deployments", "default", "web")
            .expect("deployment stored");
        assert_eq!(deployment.pointer("/spec/replicas"), Some(&json!(2)));
        let widget = k
            .object("example.com", "v1", "widgets", "default", "blue")
            .expect("widget stored");
        assert_eq!(widget.pointer("/spec/size"), Some(&json!(3)));

        assert_eq!(
            k.ok(&["get", "widget", "blue", "-o", "jsonpath={.spec.color}"]),
            "blue"
        );
        // The short name comes from discovery.
        assert_eq!(
            k.ok(&["get", "wg", "blue", "-o", "name"]).trim(),
            "widget.example.com/blue"
        );

        // Applying the same files again changes nothing, despite the server's defaulting.
        let out = k.ok(&[
            "apply",
            "-f",
            &fixture("deployment.yaml"),
            "-f",
            &fixture("widgets-crd.yaml"),
            "-f",
            &fixture("widget.yaml"),
        ]);
        assert_eq!(out.matches("unchanged").count(), 3, "{out}");
    });
}

#[test]
fn get_json_shows_what_the_server_stored() {
    each_kubectl(|k| {
        k.ok(&["apply", "-f", &fixture("deployment.yaml")]);
        let got: Value = serde_json::from_str(&k.ok(&["get", "deployment", "web", "-o", "json"]))
            .expect("kubectl prints JSON");
        let stored = k
            .object("apps", "v1", "deployments", "default", "web")
            .expect("stored");
        for field in [
            "/metadata/uid",
            "/metadata/resourceVersion",
            "/metadata/creationTimestamp",
            "/spec",
        ] {
            assert_eq!(got.pointer(field), stored.pointer(field), "{field}");
        }
        assert_eq!(got["kind"], "Deployment");
        // What the server filled in, as a real one does.
        assert_eq!(got.pointer("/metadata/generation"), Some(&json!(1)));
        assert_eq!(
            got.pointer("/spec/strategy/type"),
            Some(&json!("RollingUpdate"))
        );
        assert_eq!(got.pointer("/spec/revisionHistoryLimit"), Some(&json!(10)));
        assert_eq!(
            got.pointer("/spec/template/spec/restartPolicy"),
            Some(&json!("Always"))
        );
        assert_eq!(
            got.pointer("/spec/template/spec/containers/0/imagePullPolicy"),
            Some(&json!("IfNotPresent"))
        );

        let list: Value = serde_json::from_str(&k.ok(&["get", "deployments", "-o", "json"]))
            .expect("kubectl prints JSON");
        assert_eq!(list["kind"], "List");
        let names: Vec<&str> = list["items"]
            .as_array()
            .into_iter()
            .flatten()
            .filter_map(|i| i.pointer("/metadata/name")?.as_str())
            .collect();
        assert_eq!(names, ["web"]);
    });
}

#[test]
fn get_watch_sees_a_change() {
    each_kubectl(|k| {
        k.ok(&[
            "apply",
            "-f",
            &k.file("cm.yaml", &configmap_yaml("settings", "fast", "")),
        ]);
        let mut watch = k.spawn(&[
            "get",
            "configmap",
            "settings",
            "--watch",
            "-o",
            "jsonpath={.data.mode}{\"\\n\"}",
        ]);
        watch.wait_for_stdout("the current value", |s| s.lines().any(|l| l == "fast"));
        k.ok(&[
            "patch",
            "configmap",
            "settings",
            "--type",
            "merge",
            "-p",
            r#"{"data":{"mode":"safe"}}"#,
        ]);
        watch.wait_for_stdout("the changed value", |s| s.lines().any(|l| l == "safe"));
        assert!(watch.is_running(), "a watch keeps running after an event");
    });
}

#[test]
fn patch_merge_json_and_strategic() {
    each_kubectl(|k| {
        k.ok(&[
            "apply",
            "-f",
            &k.file("cm.yaml", &configmap_yaml("settings", "fast", "")),
        ]);

        let out = k.ok(&[
            "patch",
            "configmap",
            "settings",
            "--type",
            "merge",
            "-p",
            r#"{"data":{"level":"3","mode":null}}"#,
        ]);
        assert!(out.contains("configmap/settings patched"), "{out}");
        assert_eq!(
            data(&k.configmap("default", "settings").expect("exists")),
            json!({"level": "3"}),
            "merge patch: null deletes"
        );

        k.ok(&["patch", "configmap", "settings", "--type", "json", "-p", r#"[{"op":"test","path":"/data/level","value":"3"},{"op":"replace","path":"/data/level","value":"4"}]"#]);
        assert_eq!(
            data(&k.configmap("default", "settings").expect("exists")),
            json!({"level": "4"})
        );
        k.fails(&["patch", "configmap", "settings", "--type", "json", "-p", r#"[{"op":"test","path":"/data/level","value":"999"},{"op":"remove","path":"/data/level"}]"#]);
        assert_eq!(
            data(&k.configmap("default", "settings").expect("exists")),
            json!({"level": "4"}),
            "a failed test op changes nothing"
        );

        // Strategic merge (kubectl's default) merges containers by name, where a merge patch
        // would replace the whole list.
        k.ok(&["apply", "-f", &fixture("deployment.yaml")]);
        let out = k.ok(&["patch", "deployment", "web", "-p", r#"{"spec":{"template":{"spec":{"containers":[{"name":"sidecar","image":"registry.example/sidecar:2.0"}]}}}}"#]);
        assert!(out.contains("deployment.apps/web patched"), "{out}");
        let containers = |k: &Harness| {
            let d = k
                .object("apps", "v1", "deployments", "default", "web")
                .expect("exists");
            let list = d
                .pointer("/spec/template/spec/containers")
                .and_then(Value::as_array)
                .cloned()
                .unwrap_or_default();
            list.iter()
                .map(|c| {
                    format!(
                        "{}={}",
                        c["name"].as_str().unwrap_or("?"),
                        c["image"].as_str().unwrap_or("?")
                    )
                })
                .collect::<Vec<_>>()
        };
        assert_eq!(
            containers(k),
            [
                "web=registry.example/web:1.0",
                "sidecar=registry.example/sidecar:2.0"
            ]
        );
        let generation = k
            .object("apps", "v1", "deployments", "default", "web")
            .and_then(|d| d.pointer("/metadata/generation").cloned());
        assert_eq!(
            generation,
            Some(json!(2)),
            "a spec change bumps the generation"
        );

        k.ok(&["patch", "deployment", "web", "--type", "strategic", "-p", r#"{"spec":{"template":{"spec":{"containers":[{"name":"sidecar","$patch":"delete"}]}}}}"#]);
        assert_eq!(
            containers(k),
            ["web=registry.example/web:1.0"],
            "$patch: delete removes one element"
        );
    });
}

#[test]
fn replace_with_a_stale_object_fails() {
    each_kubectl(|k| {
        k.ok(&[
            "apply",
            "-f",
            &k.file("cm.yaml", &configmap_yaml("settings", "fast", "")),
        ]);
        let stale = k.file(
            "stale.yaml",
            &k.ok(&["get", "configmap", "settings", "-o", "yaml"]),
        );
        k.ok(&[
            "patch",
            "configmap",
            "settings",
            "--type",
            "merge",
            "-p",
            r#"{"data":{"mode":"safe"}}"#,
        ]);

        let out = k.fails(&["replace", "-f", &stale]);
        assert!(out.stderr.contains("Conflict"), "{out}");
        assert!(
            out.stderr.contains(r#"Operation cannot be fulfilled on configmaps "settings": the object has been modified; please apply your changes to the latest version and try again"#),
            "{out}"
        );
        assert_eq!(
            data(&k.configmap("default", "settings").expect("exists")),
            json!({"mode": "safe"}),
            "the stale write was refused"
        );

        let mut fresh: Value =
            serde_json::from_str(&k.ok(&["get", "configmap", "settings", "-o", "json"]))
                .expect("JSON");
        fresh["data"]["mode"] = json!("slow");
        let out = k.ok(&["replace", "-f", &k.file("fresh.json", &fresh.to_string())]);
        assert!(out.contains("configmap/settings replaced"), "{out}");
        assert_eq!(
            data(&k.configmap("default", "settings").expect("exists")),
            json!({"mode": "slow"})
        );
    });
}

#[test]
fn delete_waits_for_finalizers() {
    each_kubectl(|k| {
        let held = "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: held\n  finalizers: [example.com/hold]\ndata:\n  a: \"1\"\n";
        k.ok(&["apply", "-f", &k.file("held.yaml", held)]);

        let mut delete = k.spawn(&["delete", "configmap", "held"]);
        delete.wait_for_stdout("the deletion", |s| {
            s.contains(r#"configmap "held" deleted"#)
        });
        let cm = eventually("the ConfigMap is marked for deletion", || {
            k.configmap("default", "held")
                .filter(|c| c.pointer("/metadata/deletionTimestamp").is_some())
        });
        assert_eq!(
            cm.pointer("/metadata/finalizers"),
            Some(&json!(["example.com/hold"]))
        );
        // kubectl looks for the object to go away (by watch or by polling) and keeps waiting.
        eventually("kubectl watches or polls the object", || {
            let requests = k.kubectl_requests();
            let delete_at = requests
                .iter()
                .position(|r| r.verb == "delete" && r.name == "held")?;
            requests[delete_at..]
                .iter()
                .any(|r| {
                    r.resource == "/configmaps"
                        && matches!(r.verb.as_str(), "watch" | "get" | "list")
                })
                .then_some(())
        });
        assert!(
            delete.is_running(),
            "kubectl delete returned while the finalizer still held the object"
        );
        assert!(k.configmap("default", "held").is_some());

        k.ok(&[
            "patch",
            "configmap",
            "held",
            "--type",
            "json",
            "-p",
            r#"[{"op":"remove","path":"/metadata/finalizers"}]"#,
        ]);
        let out = delete.finish();
        assert_eq!(out.code, Some(0), "{out}");
        assert!(
            k.configmap("default", "held").is_none(),
            "gone once the last finalizer is removed"
        );
    });
}

#[test]
fn wait_for_a_condition() {
    each_kubectl(|k| {
        k.install_widgets();
        k.ok(&["apply", "-f", &fixture("widget.yaml")]);

        let mut wait = k.spawn(&[
            "wait",
            "--for=condition=Ready",
            "--timeout=60s",
            "widget/blue",
        ]);
        eventually("kubectl wait watches the widget", || {
            k.kubectl_requests()
                .iter()
                .any(|r| r.verb == "watch" && r.resource == "example.com/widgets")
                .then_some(())
        });
        assert!(
            wait.is_running(),
            "kubectl wait returned before the condition was set"
        );
        k.set_status(
            "example.com",
            "v1",
            "widgets",
            "blue",
            json!({"phase": "Ready", "conditions": [{"type": "Ready", "status": "True", "reason": "Built", "message": "all parts present", "lastTransitionTime": "2025-01-01T00:00:00Z"}]}),
        );
        let out = wait.finish();
        assert_eq!(out.code, Some(0), "{out}");
        assert!(
            out.stdout.contains("widget.example.com/blue condition met"),
            "{out}"
        );

        let out = k.fails(&[
            "wait",
            "--for=condition=Broken",
            "--timeout=1s",
            "widget/blue",
        ]);
        assert!(
            out.stderr.contains("timed out waiting for the condition"),
            "{out}"
        );
    });
}

#[test]
fn server_side_apply_owns_fields_and_reports_conflicts() {
    each_kubectl(|k| {
        let mine = k.file("mine.yaml", &configmap_yaml("settings", "fast", ""));
        let out = k.ok(&["apply", "--server-side", "-f", &mine]);
        assert!(
            out.contains("configmap/settings serverside-applied"),
            "{out}"
        );
        let managers = |k: &Harness| -> Vec<(String, String, String)> {
            let cm = k.configmap("default", "settings").expect("exists");
            let entries = cm
                .pointer("/metadata/managedFields")
                .and_then(Value::as_array)
                .cloned()
                .unwrap_or_default();
            entries
                .iter()
                .map(|e| {
                    (
                        e["manager"].as_str().unwrap_or_default().to_string(),
                        e["operation"].as_str().unwrap_or_default().to_string(),
                        e["fieldsV1"].to_string(),
                    )
                })
                .collect()
        };
        let after_first = managers(k);
        assert!(
            after_first
                .iter()
                .any(|(m, op, f)| m == "kubectl" && op == "Apply" && f.contains("f:mode")),
            "managedFields: {after_first:?}"
        );

        let theirs = k.file("theirs.yaml", &configmap_yaml("settings", "safe", ""));
        let out = k.fails(&[
            "apply",
            "--server-side",
            "--field-manager",
            "other",
            "-f",
            &theirs,
        ]);
        assert!(
            out.stderr.contains(r#"conflict with "kubectl""#) && out.stderr.contains(".data.mode"),
            "{out}"
        );
        assert_eq!(
            data(&k.configmap("default", "settings").expect("exists")),
            json!({"mode": "fast"}),
            "a conflict writes nothing"
        );

        let out = k.ok(&[
            "apply",
            "--server-side",
            "--field-manager",
            "other",
            "--force-conflicts",
            "-f",
            &theirs,
        ]);
        assert!(
            out.contains("configmap/settings serverside-applied"),
            "{out}"
        );
        assert_eq!(
            data(&k.configmap("default", "settings").expect("exists")),
            json!({"mode": "safe"})
        );
        let after_force = managers(k);
        assert!(
            after_force
                .iter()
                .any(|(m, op, f)| m == "other" && op == "Apply" && f.contains("f:mode")),
            "managedFields: {after_force:?}"
        );
        assert!(
            !after_force
                .iter()
                .any(|(m, _, f)| m == "kubectl" && f.contains("f:mode")),
            "forcing takes the field away: {after_force:?}"
        );
    });
}

#[test]
fn get_prints_tables() {
    each_kubectl(|k| {
        k.ok(&[
            "apply",
            "-f",
            &k.file("cm.yaml", &configmap_yaml("settings", "fast", "")),
        ]);
        let table = k.ok(&["get", "configmaps"]);
        assert_eq!(
            table
                .lines()
                .next()
                .and_then(|l| l.split_whitespace().next()),
            Some("NAME"),
            "{table}"
        );
        table_row(&table, "settings");

        k.install_widgets();
        k.ok(&["apply", "-f", &fixture("widget.yaml")]);
        k.set_status(
            "example.com",
            "v1",
            "widgets",
            "blue",
            json!({"phase": "Active"}),
        );
        let table = k.ok(&["get", "widgets"]);
        let header: Vec<&str> = table
            .lines()
            .next()
            .unwrap_or_default()
            .split_whitespace()
            .collect();
        assert_eq!(
            header,
            ["NAME", "SIZE", "PHASE", "AGE"],
            "the CRD's printer columns:\n{table}"
        );
        assert_eq!(table_row(&table, "blue")[..3], ["blue", "3", "Active"]);
    });
}

#[test]
fn delete_namespace_removes_its_contents() {
    each_kubectl(|k| {
        let out = k.ok(&["apply", "-f", &fixture("namespace.yaml")]);
        assert!(
            out.contains("namespace/scratch created") && out.contains("configmap/inside created"),
            "{out}"
        );
        let out = k.ok(&["delete", "namespace", "scratch"]);
        assert!(out.contains(r#"namespace "scratch" deleted"#), "{out}");
        assert!(
            k.object("", "v1", "namespaces", "", "scratch").is_none(),
            "kubectl waited until the namespace was gone"
        );
        assert!(
            k.configmap("scratch", "inside").is_none(),
            "its contents went with it"
        );
        let out = k.fails(&["get", "namespace", "scratch"]);
        assert!(
            out.stderr.contains(r#"namespaces "scratch" not found"#),
            "{out}"
        );

        // A finalizer inside keeps the namespace Terminating, and nothing new may be created.
        let held = "apiVersion: v1\nkind: Namespace\nmetadata:\n  name: held\n---\napiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: pinned\n  namespace: held\n  finalizers: [example.com/hold]\n";
        k.ok(&["apply", "-f", &k.file("held.yaml", held)]);
        k.ok(&["delete", "namespace", "held", "--wait=false"]);
        eventually("the namespace is Terminating", || {
            (k.ok(&["get", "namespace", "held", "-o", "jsonpath={.status.phase}"]) == "Terminating")
                .then_some(())
        });
        let late = "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: late\n  namespace: held\n";
        let out = k.fails(&["create", "-f", &k.file("late.yaml", late)]);
        assert!(
            out.stderr.contains("because it is being terminated"),
            "{out}"
        );

        k.ok(&[
            "patch",
            "configmap",
            "pinned",
            "-n",
            "held",
            "--type",
            "json",
            "-p",
            r#"[{"op":"remove","path":"/metadata/finalizers"}]"#,
        ]);
        eventually("the namespace is gone", || {
            k.object("", "v1", "namespaces", "", "held")
                .is_none()
                .then_some(())
        });
    });
}

#[test]
fn invalid_objects_are_refused() {
    each_kubectl(|k| {
        let deployment = |name: &str, spec_line: &str| {
            format!(
                "apiVersion: apps/v1\nkind: Deployment\nmetadata:\n  name: {name}\nspec:\n  {spec_line}\n  selector:\n    matchLabels: {{app: x}}\n  template:\n    metadata:\n      labels: {{app: x}}\n    spec:\n      containers:\n      - name: c\n        image: registry.example/c:1\n"
            )
        };
        let out = k.fails(&[
            "apply",
            "-f",
            &k.file("negative.yaml", &deployment("negative", "replicas: -1")),
        ]);
        assert!(
            out.stderr
                .contains(r#"The Deployment "negative" is invalid"#),
            "{out}"
        );
        assert!(
            out.stderr
                .contains("spec.replicas: Invalid value: -1: must be greater than or equal to 0"),
            "{out}"
        );
        assert!(
            k.object("apps", "v1", "deployments", "default", "negative")
                .is_none()
        );

        // kubectl 1.25+ asks the server for strict field validation. Older ones validate on the
        // client from OpenAPI v2 schemas, which kube-sim does not serve, so there is nothing
        // faithful to check with them.
        if k.minor >= 25 {
            let out = k.fails(&[
                "apply",
                "-f",
                &k.file("typo.yaml", &deployment("typo", "replicaz: 3")),
            ]);
            assert!(
                out.stderr
                    .contains(r#"strict decoding error: unknown field "spec.replicaz""#),
                "{out}"
            );
            assert!(
                k.object("apps", "v1", "deployments", "default", "typo")
                    .is_none()
            );
        }
    });
}

/// kubectl's generator commands. From v1.30 kubectl sends what they build as protobuf
/// (`application/vnd.kubernetes.protobuf`, accepting JSON back); v1.20 sends JSON. Either way
/// the objects stored are what a real server stores, down to a `*int32` zero that protobuf
/// carries and JSON-minded decoding would lose.
#[test]
fn create_generators_work_over_protobuf_and_json() {
    each_kubectl(|k| {
        let out = k.ok(&["create", "namespace", "x"]);
        assert!(out.contains("namespace/x created"), "{out}");
        let ns = k
            .object("", "v1", "namespaces", "", "x")
            .expect("namespace");
        assert_eq!(ns.pointer("/status/phase"), Some(&json!("Active")));
        assert_eq!(ns.pointer("/spec/finalizers"), Some(&json!(["kubernetes"])));

        // -v=8 prints the request headers: the newer kubectl really sends protobuf.
        let out = k.kubectl(&["create", "configmap", "c", "--from-literal=a=b", "-v=8"]);
        assert_eq!(out.code, Some(0), "{out}");
        assert!(out.stdout.contains("configmap/c created"), "{out}");
        if k.minor >= 30 {
            assert!(
                out.stderr
                    .contains("Content-Type: application/vnd.kubernetes.protobuf"),
                "kubectl 1.{} should send protobuf: {out}",
                k.minor
            );
        }
        let cm = k.configmap("default", "c").expect("configmap");
        assert_eq!(data(&cm), json!({"a": "b"}));
        let meta = cm["metadata"].as_object().expect("metadata");
        for absent in ["generateName", "selfLink", "deletionTimestamp", "labels"] {
            assert!(!meta.contains_key(absent), "{absent} in {cm}");
        }
        assert_eq!(
            cm.pointer("/metadata/managedFields/0/manager"),
            Some(&json!("kubectl-create"))
        );
        assert!(
            k.kubectl_requests()
                .iter()
                .any(|r| r.verb == "create" && r.name == "c" && r.code == 201),
            "the request log names the object created"
        );

        let out = k.ok(&["create", "secret", "generic", "s", "--from-literal=a=b"]);
        assert!(out.contains("secret/s created"), "{out}");
        let secret = k
            .object("", "v1", "secrets", "default", "s")
            .expect("secret");
        assert_eq!(secret["data"], json!({"a": "Yg=="}));
        assert_eq!(secret["type"], "Opaque");

        let out = k.ok(&["create", "deployment", "d", "--image=nginx"]);
        assert!(out.contains("deployment.apps/d created"), "{out}");
        let d = k
            .object("apps", "v1", "deployments", "default", "d")
            .expect("deployment");
        assert_eq!(d.pointer("/spec/replicas"), Some(&json!(1)));
        assert_eq!(
            d.pointer("/spec/selector/matchLabels"),
            Some(&json!({"app": "d"}))
        );
        assert_eq!(
            d.pointer("/spec/template/spec/containers/0/image"),
            Some(&json!("nginx"))
        );
        assert_eq!(
            d.pointer("/spec/strategy/type"),
            Some(&json!("RollingUpdate")),
            "defaulted as for JSON"
        );
        // A pointer's zero is kept: replicas 0 is not defaulted to 1.
        k.ok(&[
            "create",
            "deployment",
            "zero",
            "--image=nginx",
            "--replicas=0",
        ]);
        let zero = k
            .object("apps", "v1", "deployments", "default", "zero")
            .expect("deployment");
        assert_eq!(zero.pointer("/spec/replicas"), Some(&json!(0)));

        // The namespace flag, a Service (IntOrString target port), RBAC and a PDB.
        k.ok(&["create", "configmap", "c", "-n", "x", "--from-literal=k=v"]);
        assert_eq!(
            data(&k.configmap("x", "c").expect("configmap in x")),
            json!({"k": "v"})
        );
        k.ok(&["create", "service", "clusterip", "svc", "--tcp=80:8080"]);
        let svc = k
            .object("", "v1", "services", "default", "svc")
            .expect("service");
        assert_eq!(svc.pointer("/spec/ports/0/port"), Some(&json!(80)));
        assert_eq!(svc.pointer("/spec/ports/0/targetPort"), Some(&json!(8080)));
        k.ok(&["create", "serviceaccount", "sa"]);
        k.ok(&["create", "role", "r", "--verb=get", "--resource=configmaps"]);
        k.ok(&[
            "create",
            "rolebinding",
            "rb",
            "--role=r",
            "--serviceaccount=default:sa",
        ]);
        let rb = k
            .object(
                "rbac.authorization.k8s.io",
                "v1",
                "rolebindings",
                "default",
                "rb",
            )
            .expect("rolebinding");
        assert_eq!(
            rb["roleRef"],
            json!({"apiGroup": "rbac.authorization.k8s.io", "kind": "Role", "name": "r"})
        );
        assert_eq!(
            rb.pointer("/subjects/0/kind"),
            Some(&json!("ServiceAccount"))
        );
        assert_eq!(rb.pointer("/subjects/0/name"), Some(&json!("sa")));
        assert_eq!(rb.pointer("/subjects/0/namespace"), Some(&json!("default")));
        k.ok(&[
            "create",
            "clusterrole",
            "cr",
            "--verb=list",
            "--resource=nodes",
        ]);
        k.ok(&[
            "create",
            "clusterrolebinding",
            "crb",
            "--clusterrole=cr",
            "--user=alice",
        ]);
        let pdb = [
            "create",
            "poddisruptionbudget",
            "pdb",
            "--selector=app=d",
            "--min-available=50%",
        ];
        if k.minor >= 22 {
            k.ok(&pdb);
            let pdb = k
                .object("policy", "v1", "poddisruptionbudgets", "default", "pdb")
                .expect("pdb");
            assert_eq!(pdb.pointer("/spec/minAvailable"), Some(&json!("50%")));
        } else {
            // Older kubectl builds policy/v1beta1, which a v1.33 server no longer serves.
            let out = k.fails(&pdb);
            assert!(
                out.stderr.contains(
                    r#"no matches for kind "PodDisruptionBudget" in version "policy/v1beta1""#
                ),
                "{out}"
            );
        }

        // What was created reads back and deletes as any object does.
        let got: Value =
            serde_json::from_str(&k.ok(&["get", "deployment", "d", "-o", "json"])).expect("JSON");
        assert_eq!(got.pointer("/metadata/name"), Some(&json!("d")));
        k.ok(&["delete", "deployment", "d", "zero"]);

        // An invalid object is refused with the server's validation error, whatever the
        // encoding.
        let out = k.fails(&["create", "configmap", "Bad_Name"]);
        assert!(
            out.stderr.contains(r#"ConfigMap "Bad_Name" is invalid"#),
            "{out}"
        );
    });
}

/// `kubectl auth can-i` (SelfSubjectAccessReview) and, from v1.28, `kubectl auth whoami`
/// (SelfSubjectReview), both sent as protobuf by a current kubectl. Over HTTPS, where kubectl
/// sends the kubeconfig's bearer token.
#[test]
fn auth_can_i_and_whoami_answer_for_the_kubeconfig_user() {
    let tls = || SimConfig {
        tls: true,
        ..SimConfig::default()
    };
    each_kubectl_with(tls, |k| {
        let out = k.ok(&["auth", "can-i", "create", "deployments"]);
        assert_eq!(out.trim(), "yes", "RBAC is off here");
        if k.minor >= 28 {
            let out = k.ok(&["auth", "whoami"]);
            assert_eq!(table_row(&out, "Username"), ["Username", "admin"], "{out}");
            assert_eq!(
                table_row(&out, "Groups"),
                ["Groups", "[system:masters", "system:authenticated]"],
                "{out}"
            );
        }
    });
}

/// Over plain HTTP a current kubectl sends no bearer token, so a real server and kube-sim see
/// `system:anonymous` (which is why the demo serves HTTPS).
#[test]
fn over_http_a_current_kubectl_is_anonymous() {
    each_kubectl(|k| {
        if k.minor >= 28 {
            let out = k.ok(&["auth", "whoami"]);
            assert_eq!(
                table_row(&out, "Username"),
                ["Username", "system:anonymous"],
                "{out}"
            );
        }
    });
}

/// Claims and volumes as an administrator meets them: the default class filled in, the
/// protection finalizer added, the PVC and PV tables, a malformed claim refused with the
/// field that is wrong, and a claim in use by a scheduled Pod kept until the Pod goes.
#[test]
fn claims_volumes_and_their_protection() {
    each_kubectl(|k| {
        let sc = "apiVersion: storage.k8s.io/v1\nkind: StorageClass\nmetadata:\n  name: standard\n  annotations:\n    storageclass.kubernetes.io/is-default-class: \"true\"\nprovisioner: example.com/disk\n";
        k.ok(&["apply", "-f", &k.file("sc.yaml", sc)]);
        let pvc = "apiVersion: v1\nkind: PersistentVolumeClaim\nmetadata:\n  name: data\nspec:\n  accessModes: [ReadWriteOnce]\n  resources:\n    requests:\n      storage: 1Gi\n";
        let out = k.ok(&["apply", "-f", &k.file("pvc.yaml", pvc)]);
        assert!(out.contains("persistentvolumeclaim/data created"), "{out}");
        let claim = k
            .object("", "v1", "persistentvolumeclaims", "default", "data")
            .expect("created");
        assert_eq!(claim["spec"]["storageClassName"], "standard");
        assert_eq!(
            claim["metadata"]["finalizers"],
            json!(["kubernetes.io/pvc-protection"])
        );
        let table = k.ok(&["get", "pvc"]);
        let header: Vec<&str> = table
            .lines()
            .next()
            .unwrap_or_default()
            .split("  ")
            .map(str::trim)
            .filter(|c| !c.is_empty())
            .collect();
        assert_eq!(
            header,
            [
                "NAME",
                "STATUS",
                "VOLUME",
                "CAPACITY",
                "ACCESS MODES",
                "STORAGECLASS",
                "VOLUMEATTRIBUTESCLASS",
                "AGE"
            ],
            "{table}"
        );
        assert_eq!(
            table_row(&table, "data")[..4],
            ["data", "Pending", "standard", "<unset>"]
        );

        let pv = "apiVersion: v1\nkind: PersistentVolume\nmetadata:\n  name: pv-data\nspec:\n  capacity:\n    storage: 1Gi\n  accessModes: [ReadWriteOnce]\n  persistentVolumeReclaimPolicy: Delete\n  storageClassName: standard\n  claimRef:\n    namespace: default\n    name: data\n  csi:\n    driver: example.com\n    volumeHandle: vol-1\n";
        k.ok(&["apply", "-f", &k.file("pv.yaml", pv)]);
        k.write_status(
            "persistentvolumes",
            "",
            "pv-data",
            json!({"phase": "Bound"}),
        );
        k.ok(&[
            "patch",
            "pvc",
            "data",
            "--type",
            "merge",
            "-p",
            r#"{"spec":{"volumeName":"pv-data"}}"#,
        ]);
        k.write_status(
            "persistentvolumeclaims",
            "default",
            "data",
            json!({"phase": "Bound", "capacity": {"storage": "1Gi"}, "accessModes": ["ReadWriteOnce"]}),
        );
        let table = k.ok(&["get", "pvc"]);
        assert_eq!(
            table_row(&table, "data")[..7],
            [
                "data", "Bound", "pv-data", "1Gi", "RWO", "standard", "<unset>"
            ],
            "{table}"
        );
        let table = k.ok(&["get", "pv"]);
        let header = table.lines().next().unwrap_or_default();
        assert!(
            header.starts_with("NAME")
                && header.contains("CAPACITY   ACCESS MODES   RECLAIM POLICY   STATUS   CLAIM")
                && header.contains("STORAGECLASS   VOLUMEATTRIBUTESCLASS   REASON   AGE"),
            "{table}"
        );
        assert_eq!(
            table_row(&table, "pv-data")[..8],
            [
                "pv-data",
                "1Gi",
                "RWO",
                "Delete",
                "Bound",
                "default/data",
                "standard",
                "<unset>"
            ],
            "{table}"
        );

        // The server says which field is wrong.
        let bad = "apiVersion: v1\nkind: PersistentVolumeClaim\nmetadata:\n  name: bad\nspec:\n  resources:\n    requests:\n      storage: 1Gi\n";
        let out = k.fails(&["apply", "-f", &k.file("bad.yaml", bad)]);
        assert!(
            out.stderr
                .contains("spec.accessModes: Required value: at least 1 access mode is required"),
            "{out}"
        );
        let out = k.fails(&[
            "patch",
            "pvc",
            "data",
            "--type",
            "merge",
            "-p",
            r#"{"spec":{"resources":{"requests":{"storage":"2Gi"}}}}"#,
        ]);
        assert!(
            out.stderr
                .contains("the storageclass that provisions the pvc must support resize"),
            "{out}"
        );

        // A scheduled Pod using the claim holds its deletion.
        let pod = "apiVersion: v1\nkind: Pod\nmetadata:\n  name: user\nspec:\n  nodeName: worker-0\n  containers:\n  - name: c\n    image: busybox:1\n    volumeMounts:\n    - {name: d, mountPath: /data}\n  volumes:\n  - name: d\n    persistentVolumeClaim:\n      claimName: data\n";
        k.ok(&["apply", "-f", &k.file("pod.yaml", pod)]);
        k.ok(&["delete", "pvc", "data", "--wait=false"]);
        let table = k.ok(&["get", "pvc"]);
        assert_eq!(table_row(&table, "data")[1], "Terminating", "{table}");
        k.ok(&["delete", "pod", "user", "--wait=false"]);
        eventually("the claim is gone once its Pod is", || {
            k.object("", "v1", "persistentvolumeclaims", "default", "data")
                .is_none()
                .then_some(())
        });
        // The volume is still Bound, so its protection holds it.
        k.ok(&["delete", "pv", "pv-data", "--wait=false"]);
        assert!(
            k.object("", "v1", "persistentvolumes", "", "pv-data")
                .is_some_and(|v| v.pointer("/metadata/deletionTimestamp").is_some())
        );
        k.write_status(
            "persistentvolumes",
            "",
            "pv-data",
            json!({"phase": "Released"}),
        );
        eventually("the volume is gone once it is not Bound", || {
            k.object("", "v1", "persistentvolumes", "", "pv-data")
                .is_none()
                .then_some(())
        });
    });
}
