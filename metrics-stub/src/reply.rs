//! A response as plain data (status, content type, body), so the answers can be computed and tested
//! without a server; the server turns it into an HTTP response.

use serde::Serialize;

use crate::wire::{Status, to_body};

/// An HTTP answer.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Reply {
    /// The HTTP status code.
    pub status: u16,
    /// The `Content-Type`.
    pub content_type: String,
    /// The body.
    pub body: Vec<u8>,
}

impl Reply {
    /// A JSON document (`application/json`, newline-terminated as Go writes it).
    pub fn json<T: Serialize>(status: u16, value: &T) -> Reply {
        Reply {
            status,
            content_type: "application/json".to_string(),
            body: to_body(value),
        }
    }

    /// A `metav1.Status` with its own code as the HTTP status.
    pub fn status(status: &Status) -> Reply {
        Reply::json(status.code, status)
    }

    /// Plain text (`text/plain; charset=utf-8`, as Go's `http.Error` writes it).
    pub fn text(status: u16, text: &str) -> Reply {
        Reply {
            status,
            content_type: "text/plain; charset=utf-8".to_string(),
            body: format!("{text}\n").into_bytes(),
        }
    }

    /// What an API server answers for a path nobody serves: Go's `http.NotFound`.
    pub fn page_not_found() -> Reply {
        Reply::text(404, "404 page not found")
    }

    /// The body as text (for logs and tests).
    pub fn body_text(&self) -> String {
        String::from_utf8_lossy(&self.body).into_owned()
    }
}
