//! The HTTP front: routing of Kubernetes API paths, query parameters, content negotiation,
//! watch streaming, the request log and fault injection, and the accept loop that can be
//! "restarted" (all connections dropped, data kept).
//!
//! Where things are: `routing` paths and query strings, `responses` the shapes of answers,
//! `handle` one request from authentication to the verb, `admin` the `/__sim/` paths, `watch` watch streams, and `accept`
//! the accept loop that can be restarted.

mod accept;
mod admin;
mod handle;
mod responses;
mod routing;
#[cfg(test)]
mod tests;
mod watch;

use std::collections::HashMap;
use std::convert::Infallible;
use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;

use bytes::Bytes;
use futures::StreamExt;
use http::{HeaderMap, HeaderValue, Method, Request, Response, StatusCode, header};
use http_body_util::{BodyExt, Full, StreamBody, combinators::UnsyncBoxBody};
use hyper::body::{Frame, Incoming};
use serde_json::{Value, json};
use tokio::net::TcpListener;
use tokio::sync::mpsc;

use crate::Shared;
use crate::admission::FieldValidation;
use crate::admission_policy::Requester;
use crate::api::{self, DeleteOptions, ListOptions, PatchType, WriteOptions};
use crate::errors::ApiError;
use crate::observe::RequestRecord;
use crate::resources::ResourceType;
use crate::selector::{self, FieldSelector, LabelSelector};
use crate::store::{Event, EventType, WatchStartError};
use crate::{discovery, ssa, table};

pub use responses::Body;

/// The largest request body a real server accepts (3 MiB).
const MAX_BODY: usize = 3 * 1024 * 1024;

// The parts are one namespace split into files: each part does `use super::*` and sees
// its siblings through these globs (a glob no sibling needs goes unused).
#[allow(unused_imports)]
use accept::*;
#[allow(unused_imports)]
use handle::*;
#[allow(unused_imports)]
use responses::*;
#[allow(unused_imports)]
use routing::*;
#[allow(unused_imports)]
use watch::*;

pub use accept::serve;
pub use handle::handle;
pub(crate) use responses::json_response;
