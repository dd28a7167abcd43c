//! The kube-apiserver flags both modes (upstream and OpenShift's) share; below `plane` and
//! `openshift`, which both build a command line from them.

use std::path::Path;

/// Flags both modes share: service-account issuer and audiences, the audit log.
pub(crate) fn common_flags(dir: &Path) -> Vec<(&'static str, String)> {
    let d = dir.display();
    vec![
        (
            "service-account-issuer",
            "https://kubernetes.default.svc".into(),
        ),
        ("api-audiences", "https://kubernetes.default.svc".into()),
        ("audit-policy-file", format!("{d}/audit-policy.yaml")),
        ("audit-log-path", format!("{d}/audit.log")),
        ("audit-log-format", "json".into()),
        // Blocking: a request is in the log before its answer leaves, so a test that reads
        // the log after an answer sees it.
        ("audit-log-mode", "blocking".into()),
    ]
}
