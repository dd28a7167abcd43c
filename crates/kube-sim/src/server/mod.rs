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

/// The largest request body a real server accepts (3 MiB).
const MAX_BODY: usize = 3 * 1024 * 1024;

pub use accept::serve;
