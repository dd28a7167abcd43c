//! Which cluster an object lives in, for an operator that may serve a hosted control plane.
//!
//! Standalone (and on plain Kubernetes) there is one cluster and one client. In a hosted
//! control plane (HyperShift, `--guest-kubeconfig`) the operator runs in the management
//! cluster and reaches the guest through a kubeconfig: the control-plane namespace of the
//! management cluster holds the controller Deployment and its companions, the guest holds
//! everything else (anchors §3.8, §4.8). The rule is by namespace, so builders need no flag:
//! an object in the control-plane namespace is the management cluster's, every other object
//! (cluster-scoped, or in a guest namespace such as `openshift-cluster-csi-drivers`) is the
//! guest's. The control-plane namespace is a `clusters-<name>` namespace of the management
//! cluster and never a namespace of the guest, so the rule cannot send a guest object there.
//!
//! What it must not do: build or read objects; it only picks the client.

use kube::Client;

/// The clients of an operator: the guest's (the only one when standalone) and, when hosted,
/// the management cluster's with its control-plane namespace.
#[derive(Clone)]
pub struct Clients {
    guest: Client,
    control_plane: Option<(String, Client)>,
}

impl std::fmt::Debug for Clients {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match &self.control_plane {
            None => f.write_str("Clients(single cluster)"),
            Some((ns, _)) => write!(f, "Clients(hosted, control plane in {ns})"),
        }
    }
}

impl From<Client> for Clients {
    fn from(client: Client) -> Self {
        Self::single(client)
    }
}

impl Clients {
    /// One cluster: standalone OpenShift or plain Kubernetes.
    pub fn single(client: Client) -> Self {
        Self {
            guest: client,
            control_plane: None,
        }
    }

    /// A hosted control plane: `management` serves `control_plane_namespace`, `guest` the rest.
    pub fn hosted(management: Client, control_plane_namespace: &str, guest: Client) -> Self {
        Self {
            guest,
            control_plane: Some((control_plane_namespace.to_string(), management)),
        }
    }

    /// The client for an object in `namespace` (`None` or `""`: cluster-scoped).
    pub fn for_namespace(&self, namespace: Option<&str>) -> &Client {
        match (&self.control_plane, namespace) {
            (Some((cp, management)), Some(ns)) if ns == cp => management,
            _ => &self.guest,
        }
    }

    /// The guest cluster's client (the only one when standalone): the CR, the cluster
    /// singletons, the node side.
    pub fn guest(&self) -> &Client {
        &self.guest
    }

    /// The client of the cluster the operator runs in: the management cluster when hosted.
    pub fn own(&self) -> &Client {
        self.control_plane
            .as_ref()
            .map(|(_, c)| c)
            .unwrap_or(&self.guest)
    }

    /// The control-plane namespace when hosted.
    pub fn control_plane_namespace(&self) -> Option<&str> {
        self.control_plane.as_ref().map(|(ns, _)| ns.as_str())
    }

    /// Whether the operator serves a hosted control plane.
    pub fn is_hosted(&self) -> bool {
        self.control_plane.is_some()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn client(port: u16) -> Client {
        let config = kube::Config::new(format!("http://127.0.0.1:{port}").parse().expect("uri"));
        Client::try_from(config).expect("client")
    }

    #[tokio::test]
    async fn hosted_routes_only_the_control_plane_namespace_to_management() {
        let clients = Clients::hosted(client(1), "clusters-guest", client(2));
        assert!(clients.is_hosted());
        assert_eq!(clients.control_plane_namespace(), Some("clusters-guest"));
        let is_management =
            |ns: Option<&str>| std::ptr::eq(clients.for_namespace(ns), clients.own());
        assert!(is_management(Some("clusters-guest")));
        for ns in [
            None,
            Some(""),
            Some("openshift-cluster-csi-drivers"),
            Some("clusters-guest-2"),
        ] {
            assert!(!is_management(ns), "{ns:?}");
            assert!(std::ptr::eq(clients.for_namespace(ns), clients.guest()));
        }
        let single = Clients::single(client(3));
        assert!(!single.is_hosted());
        assert!(std::ptr::eq(single.own(), single.guest()));
        assert!(std::ptr::eq(
            single.for_namespace(Some("anything")),
            single.guest()
        ));
    }
}
