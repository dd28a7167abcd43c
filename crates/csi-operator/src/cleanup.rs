//! `csi-operator cleanup`: after a cluster is destroyed, find the Cinder volumes and snapshots
//! and Manila shares its CSI drivers created (tagged with the cluster ID by cinder-csi-plugin
//! `--cluster` and manila-csi-plugin `--cluster-id`), list them, and with `--yes` delete them
//! in the order OpenStack accepts: volume snapshots before their volume, a share's access rules
//! and snapshots before the share.
//!
//! Safety first, because a wrong delete loses data: only objects whose tag equals the cluster
//! ID exactly are candidates (share snapshots and access rules have no tag and go with their
//! tagged share); an attached or still-changing volume is skipped, and so is a volume with a
//! snapshot that is not ours (Cinder would refuse it anyway) or a share whose snapshot or rule
//! could not be removed. A dry run is the default. The plan ([`plan`]) is a pure function of
//! the listings so that it is tested without a cloud; the outputs are plain text tables, one
//! line per object, stable enough for a golden test. Nothing printed carries a secret: the
//! client's errors are scrubbed, and names from OpenStack are stripped of control characters.

use std::collections::{BTreeMap, BTreeSet};
use std::fmt::Write as _;
use std::path::PathBuf;
use std::time::{Duration, Instant};

use anyhow::Context;
use openstack::{
    AccessRule, CINDER_CLUSTER_KEY, Client, ClientOptions, CloudConfig, Deleted,
    MANILA_CLUSTER_KEY, Service, Share, ShareSnapshot, Volume, VolumeSnapshot, is_safe_id,
};

use crate::duration::parse_duration;

#[derive(clap::Args)]
pub struct CleanupArgs {
    /// The cluster ID the drivers ran with (`--cluster` / `--cluster-id`; on OpenShift the
    /// Infrastructure object's status.infrastructureName). Only objects tagged with exactly
    /// this value are touched.
    #[arg(long)]
    cluster_id: String,
    /// A clouds.yaml with credentials for the cluster's project.
    #[arg(long)]
    clouds: PathBuf,
    /// The cloud to use in clouds.yaml.
    #[arg(long, default_value = openstack::DEFAULT_CLOUD)]
    cloud: String,
    /// Delete. Without it, only list what would be deleted and what would be skipped.
    #[arg(long)]
    yes: bool,
    /// How long to wait for a volume's snapshots (a share's snapshots and access rules) to be
    /// gone before deleting the volume (share); OpenStack removes them asynchronously.
    #[arg(long, default_value = "5m", value_parser = parse_duration)]
    wait_timeout: Duration,
}

/// What an object is, in the order they are deleted.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub enum Kind {
    VolumeSnapshot,
    Volume,
    ShareAccessRule,
    ShareSnapshot,
    Share,
}

impl Kind {
    fn label(self) -> &'static str {
        match self {
            Kind::VolumeSnapshot => "volume snapshot",
            Kind::Volume => "volume",
            Kind::ShareAccessRule => "share access rule",
            Kind::ShareSnapshot => "share snapshot",
            Kind::Share => "share",
        }
    }
}

/// One object of the plan.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Item {
    pub kind: Kind,
    pub id: String,
    pub name: String,
    /// What it is (size, parent), for the listing.
    pub detail: String,
    /// The share an access rule belongs to.
    pub parent: Option<String>,
    /// `Some(reason)`: not deleted.
    pub skip: Option<String>,
}

/// What the cloud holds, as listed.
#[derive(Default)]
pub struct Inventory {
    pub volumes: Vec<Volume>,
    pub volume_snapshots: Vec<VolumeSnapshot>,
    pub shares: Vec<Share>,
    pub share_snapshots: Vec<ShareSnapshot>,
    /// Access rules of the tagged shares, by share id.
    pub access_rules: BTreeMap<String, Vec<AccessRule>>,
}

/// Volume states in which Cinder refuses a delete or the volume is in someone's hands.
const BUSY_VOLUME: &[&str] = &[
    "in-use",
    "attaching",
    "detaching",
    "reserved",
    "deleting",
    "creating",
    "downloading",
    "uploading",
    "backing-up",
    "restoring-backup",
    "extending",
    "maintenance",
    "awaiting-transfer",
];

/// Share states in which a delete would be refused or races another operation.
const BUSY_SHARE: &[&str] = &[
    "creating",
    "deleting",
    "extending",
    "shrinking",
    "migrating",
    "managing",
    "unmanaging",
    "reverting",
];

fn tagged(metadata: &BTreeMap<String, String>, key: &str, cluster_id: &str) -> bool {
    metadata.get(key).is_some_and(|v| v == cluster_id)
}

/// The plan: every candidate, in deletion order, with the reason if it is skipped.
pub fn plan(inv: &Inventory, cluster_id: &str) -> Vec<Item> {
    let mut items = Vec::new();
    let volumes: BTreeMap<&str, &Volume> = inv.volumes.iter().map(|v| (v.id.as_str(), v)).collect();
    let attached = |v: &Volume| -> Option<String> {
        if !v.attached_to.is_empty() {
            Some(format!(
                "attached to server {} (status {})",
                v.attached_to.join(", "),
                v.status
            ))
        } else if BUSY_VOLUME.contains(&v.status.as_str()) {
            Some(format!("status {}", v.status))
        } else {
            None
        }
    };
    let unsafe_id = |id: &str| (!is_safe_id(id)).then(|| "not an OpenStack id".to_string());

    // Volume snapshots tagged for this cluster; kept when their volume is attached (the
    // cluster, or someone, still uses it).
    let ours: Vec<&VolumeSnapshot> = inv
        .volume_snapshots
        .iter()
        .filter(|s| tagged(&s.metadata, CINDER_CLUSTER_KEY, cluster_id))
        .collect();
    for s in &ours {
        let skip = unsafe_id(&s.id).or_else(|| {
            volumes
                .get(s.volume_id.as_str())
                .and_then(|v| attached(v))
                .map(|why| format!("its volume {} is {why}", s.volume_id))
        });
        items.push(Item {
            kind: Kind::VolumeSnapshot,
            id: s.id.clone(),
            name: s.name.clone(),
            detail: format!("of volume {}", s.volume_id),
            parent: Some(s.volume_id.clone()),
            skip,
        });
    }
    let our_snapshot_ids: BTreeSet<&str> = ours.iter().map(|s| s.id.as_str()).collect();
    for v in inv
        .volumes
        .iter()
        .filter(|v| tagged(&v.metadata, CINDER_CLUSTER_KEY, cluster_id))
    {
        let foreign: Vec<&str> = inv
            .volume_snapshots
            .iter()
            .filter(|s| s.volume_id == v.id && !our_snapshot_ids.contains(s.id.as_str()))
            .map(|s| s.id.as_str())
            .collect();
        let skip = unsafe_id(&v.id).or_else(|| attached(v)).or_else(|| {
            (!foreign.is_empty()).then(|| {
                format!(
                    "has snapshots not tagged for this cluster: {}",
                    foreign.join(", ")
                )
            })
        });
        items.push(Item {
            kind: Kind::Volume,
            id: v.id.clone(),
            name: v.name.clone(),
            detail: format!("{} GiB", v.size),
            parent: None,
            skip,
        });
    }

    for sh in inv
        .shares
        .iter()
        .filter(|s| tagged(&s.metadata, MANILA_CLUSTER_KEY, cluster_id))
    {
        let busy = BUSY_SHARE
            .contains(&sh.status.as_str())
            .then(|| format!("share {} has status {}", sh.id, sh.status));
        let skip_child = unsafe_id(&sh.id).or_else(|| busy.clone());
        for r in inv.access_rules.get(&sh.id).into_iter().flatten() {
            items.push(Item {
                kind: Kind::ShareAccessRule,
                id: r.id.clone(),
                name: String::new(),
                detail: format!("{} {} on share {}", r.access_type, r.access_to, sh.id),
                parent: Some(sh.id.clone()),
                skip: unsafe_id(&r.id).or_else(|| skip_child.clone()),
            });
        }
        for s in inv.share_snapshots.iter().filter(|s| s.share_id == sh.id) {
            items.push(Item {
                kind: Kind::ShareSnapshot,
                id: s.id.clone(),
                name: s.name.clone(),
                detail: format!("of share {}", sh.id),
                parent: Some(sh.id.clone()),
                skip: unsafe_id(&s.id).or_else(|| skip_child.clone()),
            });
        }
        items.push(Item {
            kind: Kind::Share,
            id: sh.id.clone(),
            name: sh.name.clone(),
            detail: format!("{} GiB {}", sh.size, sh.share_proto),
            parent: None,
            skip: unsafe_id(&sh.id).or(busy.map(|_| format!("status {}", sh.status))),
        });
    }
    // Stable order: by kind (deletion order), then id.
    items.sort_by(|a, b| (a.kind, &a.id).cmp(&(b.kind, &b.id)));
    items
}

/// Text from OpenStack, safe for a terminal and one table cell.
fn cell(text: &str) -> String {
    let t: String = text
        .chars()
        .map(|c| if c.is_control() { '?' } else { c })
        .collect();
    if t.is_empty() { "-".into() } else { t }
}

/// Left-aligned columns, two spaces apart; the last column is not padded.
fn table(header: &[&str], rows: &[Vec<String>]) -> String {
    let mut widths: Vec<usize> = header.iter().map(|h| h.chars().count()).collect();
    for r in rows {
        for (i, c) in r.iter().enumerate() {
            widths[i] = widths[i].max(c.chars().count());
        }
    }
    let mut out = String::new();
    let line = |out: &mut String, cells: &mut dyn Iterator<Item = &str>| {
        let cells: Vec<&str> = cells.collect();
        let mut text = String::new();
        for (i, c) in cells.iter().enumerate() {
            if i + 1 == cells.len() {
                text.push_str(c);
            } else {
                let _ = write!(text, "{c:<w$}  ", w = widths[i]);
            }
        }
        out.push_str(text.trim_end());
        out.push('\n');
    };
    line(&mut out, &mut header.iter().copied());
    for r in rows {
        line(&mut out, &mut r.iter().map(String::as_str));
    }
    out
}

/// The dry-run listing.
pub fn render_plan(items: &[Item], cluster_id: &str, cloud: &str, notes: &[String]) -> String {
    let mut out = format!(
        "Objects of cluster {cluster_id:?} in cloud {cloud:?} (dry run: nothing is deleted; run again with --yes to delete)\n"
    );
    for n in notes {
        let _ = writeln!(out, "note: {n}");
    }
    out.push('\n');
    if items.is_empty() {
        out.push_str("Nothing is tagged for this cluster.\n");
        return out;
    }
    let rows: Vec<Vec<String>> = items
        .iter()
        .map(|i| {
            vec![
                if i.skip.is_some() { "skip" } else { "delete" }.into(),
                i.kind.label().into(),
                cell(&i.id),
                cell(&i.name),
                match &i.skip {
                    Some(why) => format!("{}; {}", cell(&i.detail), cell(why)),
                    None => cell(&i.detail),
                },
            ]
        })
        .collect();
    out.push_str(&table(&["ACTION", "KIND", "ID", "NAME", "DETAIL"], &rows));
    let skipped = items.iter().filter(|i| i.skip.is_some()).count();
    let _ = writeln!(
        out,
        "\nWould delete {}, skip {skipped}.",
        items.len() - skipped
    );
    out
}

/// How one object ended.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Outcome {
    Deleted,
    AlreadyGone,
    Skipped(String),
    Failed(String),
}

/// The summary table after `--yes`.
pub fn render_summary(results: &[(Item, Outcome)]) -> String {
    let rows: Vec<Vec<String>> = results
        .iter()
        .map(|(i, o)| {
            let (result, reason) = match o {
                Outcome::Deleted => ("deleted", String::new()),
                Outcome::AlreadyGone => ("deleted", "already gone".to_string()),
                Outcome::Skipped(why) => ("skipped", cell(why)),
                Outcome::Failed(why) => ("failed", cell(why)),
            };
            vec![
                result.into(),
                i.kind.label().into(),
                cell(&i.id),
                cell(&i.name),
                reason,
            ]
        })
        .collect();
    let mut out = String::from("\n");
    if rows.is_empty() {
        out.push_str("Nothing is tagged for this cluster.\n");
    } else {
        out.push_str(&table(&["RESULT", "KIND", "ID", "NAME", "REASON"], &rows));
    }
    let count = |f: fn(&Outcome) -> bool| results.iter().filter(|(_, o)| f(o)).count();
    let _ = writeln!(
        out,
        "\nDeleted {}, skipped {}, failed {}.",
        count(|o| matches!(o, Outcome::Deleted | Outcome::AlreadyGone)),
        count(|o| matches!(o, Outcome::Skipped(_))),
        count(|o| matches!(o, Outcome::Failed(_))),
    );
    out
}

pub async fn run(args: CleanupArgs) -> anyhow::Result<()> {
    let cluster_id = args.cluster_id.as_str();
    if cluster_id.trim().is_empty() {
        anyhow::bail!("--cluster-id is empty; give the ID the drivers were started with");
    }
    if cluster_id.trim() != cluster_id || cluster_id.chars().any(char::is_control) {
        anyhow::bail!(
            "--cluster-id {cluster_id:?} has leading/trailing spaces or control characters; the tag must match exactly"
        );
    }
    let path = args.clouds.display().to_string();
    let text = std::fs::read_to_string(&args.clouds)
        .with_context(|| format!("cannot read --clouds {path}"))?;
    let config = CloudConfig::from_clouds_yaml(&text, &args.cloud)
        .map_err(|e| anyhow::anyhow!("--clouds {path}: {e}"))?;
    let ca_bundle = match &config.cacert_path {
        Some(ca) => Some(
            std::fs::read(ca)
                .with_context(|| format!("cannot read the cacert {ca} named in {path}"))?,
        ),
        None => None,
    };
    let options = ClientOptions {
        ca_bundle,
        user_agent: format!("csi-operator-cleanup/{}", env!("CARGO_PKG_VERSION")),
        ..ClientOptions::default()
    };
    let client = Client::new(config, &options).map_err(|e| anyhow::anyhow!("{e}"))?;
    let (inventory, notes) = list(&client, cluster_id).await?;
    let items = plan(&inventory, cluster_id);
    if !args.yes {
        print!("{}", render_plan(&items, cluster_id, &args.cloud, &notes));
        return Ok(());
    }
    for n in &notes {
        eprintln!("note: {n}");
    }
    let results = execute(&client, items, args.wait_timeout).await;
    print!("{}", render_summary(&results));
    let failed = results
        .iter()
        .filter(|(_, o)| matches!(o, Outcome::Failed(_)))
        .count();
    if failed > 0 {
        anyhow::bail!("{failed} deletion(s) failed; see the table above and run again once fixed");
    }
    Ok(())
}

/// Everything the plan needs. A service missing from the catalog is a note, not an error (a
/// cloud without Manila had no shares to leave behind); a failed listing stops the command,
/// since a partial view could hide a dependency.
async fn list(client: &Client, cluster_id: &str) -> anyhow::Result<(Inventory, Vec<String>)> {
    let err = |e: openstack::Error| anyhow::anyhow!("{e}");
    let mut inv = Inventory::default();
    let mut notes = Vec::new();
    if client.has_service(Service::Volume).await.map_err(err)? {
        inv.volumes = client.volumes().await.map_err(err)?;
        inv.volume_snapshots = client.volume_snapshots().await.map_err(err)?;
    } else {
        notes.push("the catalog has no Cinder (volume) service; volumes were not looked at".into());
    }
    if client
        .has_service(Service::SharedFileSystem)
        .await
        .map_err(err)?
    {
        inv.shares = client.shares().await.map_err(err)?;
        inv.share_snapshots = client.share_snapshots().await.map_err(err)?;
        // Access rules are listed per share, only for ours (one call each).
        let cluster_shares: Vec<String> = inv
            .shares
            .iter()
            .filter(|s| tagged(&s.metadata, MANILA_CLUSTER_KEY, cluster_id) && is_safe_id(&s.id))
            .map(|s| s.id.clone())
            .collect();
        for id in cluster_shares {
            let rules = client.share_access_rules(&id).await.map_err(err)?;
            inv.access_rules.insert(id, rules);
        }
    } else {
        notes.push(
            "the catalog has no Manila (shared file system) service; shares were not looked at"
                .into(),
        );
    }
    Ok((inv, notes))
}

/// Deletes the plan's objects in order, one line of progress per object on stderr. A volume
/// (share) waits until the children deleted before it are gone, and is skipped if one of
/// them could not be removed.
async fn execute(client: &Client, items: Vec<Item>, wait: Duration) -> Vec<(Item, Outcome)> {
    let total = items.iter().filter(|i| i.skip.is_none()).count();
    let mut done = 0;
    let mut results: Vec<(Item, Outcome)> = Vec::new();
    for item in items {
        if let Some(why) = &item.skip {
            let why = why.clone();
            results.push((item, Outcome::Skipped(why)));
            continue;
        }
        done += 1;
        eprint!(
            "[{done}/{total}] deleting {} {}{} ... ",
            item.kind.label(),
            cell(&item.id),
            if item.name.is_empty() {
                String::new()
            } else {
                format!(" ({})", cell(&item.name))
            }
        );
        let outcome = delete_one(client, &item, &results, wait).await;
        eprintln!(
            "{}",
            match &outcome {
                Outcome::Deleted => "deleted".to_string(),
                Outcome::AlreadyGone => "already gone".to_string(),
                Outcome::Skipped(why) => format!("skipped: {why}"),
                Outcome::Failed(why) => format!("FAILED: {why}"),
            }
        );
        results.push((item, outcome));
    }
    results
}

async fn delete_one(
    client: &Client,
    item: &Item,
    earlier: &[(Item, Outcome)],
    wait: Duration,
) -> Outcome {
    let children = |kinds: &[Kind]| -> Vec<&(Item, Outcome)> {
        earlier
            .iter()
            .filter(|(i, _)| kinds.contains(&i.kind) && i.parent.as_deref() == Some(&item.id))
            .collect()
    };
    let result = match item.kind {
        Kind::VolumeSnapshot => client.delete_volume_snapshot(&item.id).await,
        Kind::ShareAccessRule => {
            let share = item.parent.as_deref().unwrap_or_default();
            client.deny_share_access(share, &item.id).await
        }
        Kind::ShareSnapshot => client.delete_share_snapshot(&item.id).await,
        Kind::Volume | Kind::Share => {
            let kinds: &[Kind] = if item.kind == Kind::Volume {
                &[Kind::VolumeSnapshot]
            } else {
                &[Kind::ShareAccessRule, Kind::ShareSnapshot]
            };
            let kids = children(kinds);
            if let Some((kid, _)) = kids
                .iter()
                .find(|(_, o)| !matches!(o, Outcome::Deleted | Outcome::AlreadyGone))
            {
                return Outcome::Skipped(format!(
                    "its {} {} was not removed",
                    kid.kind.label(),
                    kid.id
                ));
            }
            if let Err(why) = wait_gone(client, item, &kids, wait).await {
                return Outcome::Failed(why);
            }
            if item.kind == Kind::Volume {
                client.delete_volume(&item.id).await
            } else {
                client.delete_share(&item.id).await
            }
        }
    };
    match result {
        Ok(Deleted::Accepted) => Outcome::Deleted,
        Ok(Deleted::AlreadyGone) => Outcome::AlreadyGone,
        Err(e) => Outcome::Failed(e.to_string()),
    }
}

/// Polls until every deleted child of `parent` has disappeared, or `wait` has passed.
async fn wait_gone(
    client: &Client,
    parent: &Item,
    kids: &[&(Item, Outcome)],
    wait: Duration,
) -> Result<(), String> {
    let deadline = Instant::now() + wait;
    loop {
        let mut pending = Vec::new();
        let mut rules: Option<Vec<AccessRule>> = None;
        for (kid, _) in kids {
            let exists = match kid.kind {
                Kind::VolumeSnapshot => client.volume_snapshot_exists(&kid.id).await,
                Kind::ShareSnapshot => client.share_snapshot_exists(&kid.id).await,
                Kind::ShareAccessRule => {
                    if rules.is_none() {
                        rules = Some(
                            client
                                .share_access_rules(&parent.id)
                                .await
                                .map_err(|e| e.to_string())?,
                        );
                    }
                    Ok(rules.iter().flatten().any(|r| r.id == kid.id))
                }
                Kind::Volume | Kind::Share => Ok(false),
            };
            if exists.map_err(|e| e.to_string())? {
                pending.push(format!("{} {}", kid.kind.label(), kid.id));
            }
        }
        if pending.is_empty() {
            return Ok(());
        }
        if Instant::now() >= deadline {
            return Err(format!(
                "still there after {} s: {} (raise --wait-timeout, or run again later)",
                wait.as_secs(),
                pending.join(", ")
            ));
        }
        tokio::time::sleep(Duration::from_secs(1)).await;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const ID: &str = "c1";

    fn meta(key: &str, value: &str) -> BTreeMap<String, String> {
        BTreeMap::from([(key.to_string(), value.to_string())])
    }

    fn volume(id: &str, tag: Option<&str>) -> Volume {
        Volume {
            id: id.into(),
            name: format!("pvc-{id}"),
            status: "available".into(),
            size: 1,
            metadata: tag.map(|t| meta(CINDER_CLUSTER_KEY, t)).unwrap_or_default(),
            attached_to: vec![],
        }
    }

    fn snapshot(id: &str, volume: &str, tag: Option<&str>) -> VolumeSnapshot {
        VolumeSnapshot {
            id: id.into(),
            name: format!("snap-{id}"),
            status: "available".into(),
            volume_id: volume.into(),
            metadata: tag.map(|t| meta(CINDER_CLUSTER_KEY, t)).unwrap_or_default(),
        }
    }

    fn reason<'a>(items: &'a [Item], id: &str) -> Option<&'a str> {
        items
            .iter()
            .find(|i| i.id == id)
            .unwrap_or_else(|| panic!("{id} is in the plan"))
            .skip
            .as_deref()
    }

    #[test]
    fn only_the_exact_tag_is_a_candidate() {
        let inv = Inventory {
            volumes: vec![
                volume("a", Some(ID)),
                volume("b", None),
                volume("c", Some("c1 ")),
                volume("d", Some("C1")),
                volume("e", Some("other")),
            ],
            ..Inventory::default()
        };
        let items = plan(&inv, ID);
        let ids: Vec<&str> = items.iter().map(|i| i.id.as_str()).collect();
        assert_eq!(ids, ["a"]);
    }

    #[test]
    fn attached_and_busy_volumes_and_foreign_snapshots_are_skipped() {
        let mut attached = volume("att", Some(ID));
        attached.attached_to = vec!["srv-1".into()];
        attached.status = "in-use".into();
        let mut creating = volume("new", Some(ID));
        creating.status = "creating".into();
        let inv = Inventory {
            volumes: vec![attached, creating, volume("withforeign", Some(ID))],
            volume_snapshots: vec![
                snapshot("s-att", "att", Some(ID)),
                snapshot("s-foreign", "withforeign", None),
            ],
            ..Inventory::default()
        };
        let items = plan(&inv, ID);
        assert_eq!(
            reason(&items, "att"),
            Some("attached to server srv-1 (status in-use)")
        );
        assert_eq!(reason(&items, "new"), Some("status creating"));
        assert_eq!(
            reason(&items, "withforeign"),
            Some("has snapshots not tagged for this cluster: s-foreign")
        );
        assert!(
            reason(&items, "s-att").is_some_and(|r| r.contains("attached")),
            "a snapshot of an attached volume is left alone"
        );
        assert!(!items.iter().any(|i| i.id == "s-foreign"));
    }

    #[test]
    fn order_is_snapshots_then_volumes_then_rules_snapshots_shares() {
        let share = Share {
            id: "sh".into(),
            name: "pvc-sh".into(),
            status: "available".into(),
            size: 1,
            share_proto: "NFS".into(),
            metadata: meta(MANILA_CLUSTER_KEY, ID),
        };
        let inv = Inventory {
            volumes: vec![volume("v", Some(ID))],
            volume_snapshots: vec![snapshot("s", "v", Some(ID))],
            shares: vec![share],
            share_snapshots: vec![ShareSnapshot {
                id: "ss".into(),
                name: "snap".into(),
                status: "available".into(),
                share_id: "sh".into(),
            }],
            access_rules: BTreeMap::from([(
                "sh".to_string(),
                vec![AccessRule {
                    id: "r".into(),
                    access_type: "ip".into(),
                    access_to: "10.0.0.0/24".into(),
                    state: "active".into(),
                }],
            )]),
        };
        let kinds: Vec<Kind> = plan(&inv, ID).iter().map(|i| i.kind).collect();
        assert_eq!(
            kinds,
            [
                Kind::VolumeSnapshot,
                Kind::Volume,
                Kind::ShareAccessRule,
                Kind::ShareSnapshot,
                Kind::Share
            ]
        );
    }

    #[test]
    fn odd_ids_and_names_are_refused_or_neutralized() {
        let mut v = volume("../x", Some(ID));
        v.name = "evil\u{1b}[2Jname\n".into();
        let items = plan(
            &Inventory {
                volumes: vec![v],
                ..Inventory::default()
            },
            ID,
        );
        assert_eq!(reason(&items, "../x"), Some("not an OpenStack id"));
        let text = render_plan(&items, ID, "openstack", &[]);
        assert!(!text.contains('\u{1b}'), "{text}");
        assert!(text.contains("evil?[2Jname?"), "{text}");
    }
}
