//! The one error type of the crate. Each variant names the step that failed and says what to
//! check; none carries a secret (server messages are scrubbed of the credentials before they
//! are stored, and URLs lose any user-info part).

use std::fmt;
use std::time::Duration;

/// What the client was doing when it failed.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Step {
    Authenticate,
    /// `GET /v3/auth/catalog`: the current catalog, for a service the token's catalog lacks.
    ReadCatalog,
    ListComputeZones,
    ListVolumeZones,
    ListVolumeTypes,
    ListShareTypes,
    // The calls of `csi-operator cleanup` (volumes.rs, shares.rs).
    ListVolumes,
    ListVolumeSnapshots,
    ReadVolumeSnapshot,
    DeleteVolume,
    DeleteVolumeSnapshot,
    ListShares,
    ListShareSnapshots,
    ReadShareSnapshot,
    ListShareAccessRules,
    DenyShareAccess,
    DeleteShare,
    DeleteShareSnapshot,
    // The export-network diagnostic of the Manila operator (share_networks.rs).
    ListShareExportLocations,
    ReadShareNetwork,
}

impl fmt::Display for Step {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Step::Authenticate => "authenticate with Keystone",
            Step::ReadCatalog => "read the service catalog from Keystone",
            Step::ListComputeZones => "list Nova (compute) availability zones",
            Step::ListVolumeZones => "list Cinder (volume) availability zones",
            Step::ListVolumeTypes => "list Cinder volume types",
            Step::ListShareTypes => "list Manila share types",
            Step::ListVolumes => "list Cinder volumes",
            Step::ListVolumeSnapshots => "list Cinder volume snapshots",
            Step::ReadVolumeSnapshot => "read a Cinder volume snapshot",
            Step::DeleteVolume => "delete a Cinder volume",
            Step::DeleteVolumeSnapshot => "delete a Cinder volume snapshot",
            Step::ListShares => "list Manila shares",
            Step::ListShareSnapshots => "list Manila share snapshots",
            Step::ReadShareSnapshot => "read a Manila share snapshot",
            Step::ListShareAccessRules => "list the access rules of a Manila share",
            Step::DenyShareAccess => "remove an access rule of a Manila share",
            Step::DeleteShare => "delete a Manila share",
            Step::DeleteShareSnapshot => "delete a Manila share snapshot",
            Step::ListShareExportLocations => "list the export locations of a Manila share",
            Step::ReadShareNetwork => "read a Manila share network",
        })
    }
}

/// How an HTTP exchange failed.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Failure {
    /// The server answered with an error status; `message` is its (scrubbed) explanation.
    Status { code: u16, message: Option<String> },
    /// No complete answer within the request timeout.
    Timeout { after: Duration },
    /// No connection (refused, DNS, proxy, network).
    Unreachable { reason: String },
    /// The TLS handshake failed, usually an unknown CA.
    Tls { reason: String },
    /// A redirect; followed redirects could carry the token elsewhere, so we stop.
    Redirect { code: u16, location: String },
    /// A 2xx answer we cannot use.
    BadResponse { reason: String },
}

impl Failure {
    fn describe(&self, step: Step) -> String {
        let said = |m: &Option<String>| match m {
            Some(m) if !m.is_empty() => format!(" (server said: {m})"),
            _ => String::new(),
        };
        match self {
            Failure::Status { code: 401, .. } if step == Step::Authenticate => {
                "the credentials were rejected by Keystone (HTTP 401): check the user, \
                 password or application credential and the project in clouds.yaml"
                    .into()
            }
            Failure::Status { code: 401, message } => format!(
                "the token was rejected (HTTP 401) even after authenticating again{}",
                said(message)
            ),
            Failure::Status { code: 403, message } => format!(
                "forbidden (HTTP 403): the user has no role that allows this call in its \
                 project{}",
                said(message)
            ),
            Failure::Status { code: 404, message } => format!(
                "not found (HTTP 404): check {}{}",
                if matches!(step, Step::Authenticate | Step::ReadCatalog) {
                    "auth.auth_url in clouds.yaml (it should be the Keystone URL, e.g. \
                     https://keystone.example.com:5000/v3)"
                } else {
                    "the service endpoint in the Keystone catalog"
                },
                said(message)
            ),
            Failure::Status { code, message } if *code >= 500 => format!(
                "the service failed (HTTP {code}); it may be down or overloaded, and the \
                 call will be retried{}",
                said(message)
            ),
            Failure::Status { code, message } => {
                format!("unexpected HTTP status {code}{}", said(message))
            }
            Failure::Timeout { after } => format!(
                "no answer within {} s (timeout); check that the endpoint is reachable from \
                 the cluster and the proxy settings",
                after.as_secs_f64()
            ),
            Failure::Unreachable { reason } => format!(
                "cannot connect ({reason}); check the URL, DNS, firewall and the \
                 HTTP(S)_PROXY/NO_PROXY settings"
            ),
            Failure::Tls { reason } => format!(
                "TLS handshake failed ({reason}); if the cloud uses a private CA, provide it \
                 (the `cacert` key of the credentials Secret)"
            ),
            Failure::Redirect { code, location } => format!(
                "redirected (HTTP {code}) to {location}; use that URL in clouds.yaml or the \
                 catalog instead"
            ),
            Failure::BadResponse { reason } => format!("unusable answer: {reason}"),
        }
    }
}

/// A coarse category, for condition reasons and metrics.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ErrorKind {
    InvalidConfig,
    CredentialsRejected,
    Forbidden,
    NotFound,
    ServerError,
    Timeout,
    Unreachable,
    Tls,
    MissingEndpoint,
    InvalidResponse,
}

#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum Error {
    #[error("parse clouds.yaml: {0}")]
    CloudsYaml(String),

    #[error("the CA bundle cannot be used: {0}")]
    CaBundle(String),

    #[error("set up the HTTP client: {0}")]
    HttpClient(String),

    #[error("{step} at {url}: {}", .failure.describe(*.step))]
    Request {
        step: Step,
        url: String,
        failure: Failure,
    },

    #[error("catalog lookup: {0}")]
    EndpointNotFound(String),

    #[error("{step}: {reason}")]
    Empty { step: Step, reason: String },
}

impl Error {
    pub fn kind(&self) -> ErrorKind {
        match self {
            Error::CloudsYaml(_) | Error::CaBundle(_) | Error::HttpClient(_) => {
                ErrorKind::InvalidConfig
            }
            Error::EndpointNotFound(_) => ErrorKind::MissingEndpoint,
            Error::Empty { .. } => ErrorKind::InvalidResponse,
            Error::Request { failure, .. } => match failure {
                Failure::Status { code: 401, .. } => ErrorKind::CredentialsRejected,
                Failure::Status { code: 403, .. } => ErrorKind::Forbidden,
                Failure::Status { code: 404, .. } => ErrorKind::NotFound,
                Failure::Status { code, .. } if *code >= 500 => ErrorKind::ServerError,
                Failure::Status { .. } | Failure::Redirect { .. } | Failure::BadResponse { .. } => {
                    ErrorKind::InvalidResponse
                }
                Failure::Timeout { .. } => ErrorKind::Timeout,
                Failure::Unreachable { .. } => ErrorKind::Unreachable,
                Failure::Tls { .. } => ErrorKind::Tls,
            },
        }
    }

    /// The step that failed, when the failure was an HTTP exchange.
    pub fn step(&self) -> Option<Step> {
        match self {
            Error::Request { step, .. } | Error::Empty { step, .. } => Some(*step),
            _ => None,
        }
    }

    /// The HTTP status the server answered, if it answered.
    pub fn status(&self) -> Option<u16> {
        match self {
            Error::Request {
                failure: Failure::Status { code, .. },
                ..
            } => Some(*code),
            _ => None,
        }
    }
}
