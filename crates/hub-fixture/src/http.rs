//! The little HTTP/1.1 this server needs: read one request head, write one response with
//! `Connection: close`. Bodies are streamed by the caller.

use std::io::{self, BufRead, BufReader, Read, Write};

/// The largest request head read; the Hub's clients send a few hundred bytes.
const MAX_HEAD: usize = 16 * 1024;

/// A parsed request head.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Request {
    pub method: String,
    /// The path without the query.
    pub path: String,
    /// `key=value` pairs of the query, percent-decoded.
    pub query: Vec<(String, String)>,
    /// Header names lower-cased.
    pub headers: Vec<(String, String)>,
}

impl Request {
    /// The first header called `name` (lower-case).
    pub fn header(&self, name: &str) -> Option<&str> {
        self.headers
            .iter()
            .find(|(k, _)| k == name)
            .map(|(_, v)| v.as_str())
    }

    /// Every value of query key `key` (also given as `key[]`, as browsers' and JS clients'
    /// array encoding writes it).
    pub fn query_all(&self, key: &str) -> Vec<&str> {
        let bracketed = format!("{key}[]");
        self.query
            .iter()
            .filter(|(k, _)| *k == key || *k == bracketed)
            .map(|(_, v)| v.as_str())
            .collect()
    }
}

/// Reads a request head from `stream`; `None` when the peer sent nothing usable.
pub fn read_request(stream: impl Read) -> Option<Request> {
    let mut reader = BufReader::new(stream.take(MAX_HEAD as u64));
    let mut line = String::new();
    reader.read_line(&mut line).ok()?;
    let mut parts = line.split_whitespace();
    let (method, target) = (parts.next()?.to_string(), parts.next()?);
    let (path, query) = target.split_once('?').unwrap_or((target, ""));
    let query = query
        .split('&')
        .filter(|kv| !kv.is_empty())
        .map(|kv| {
            let (k, v) = kv.split_once('=').unwrap_or((kv, ""));
            (percent_decode(k), percent_decode(v))
        })
        .collect();
    let mut headers = Vec::new();
    loop {
        let mut h = String::new();
        if reader.read_line(&mut h).ok()? == 0 || h.trim().is_empty() {
            break;
        }
        if let Some((k, v)) = h.split_once(':') {
            headers.push((k.trim().to_ascii_lowercase(), v.trim().to_string()));
        }
    }
    Some(Request {
        method,
        path: percent_decode(path),
        query,
        headers,
    })
}

/// `%XX` and `+` decoded; malformed escapes are kept as written.
pub fn percent_decode(s: &str) -> String {
    let bytes = s.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        let hex = || u8::from_str_radix(s.get(i + 1..i + 3)?, 16).ok();
        match bytes[i] {
            b'%' if hex().is_some() => {
                out.push(hex().unwrap_or(0));
                i += 3;
            }
            b'+' => {
                out.push(b' ');
                i += 1;
            }
            b => {
                out.push(b);
                i += 1;
            }
        }
    }
    String::from_utf8_lossy(&out).into_owned()
}

/// The reason phrase of the statuses this server sends.
fn reason(status: u16) -> &'static str {
    match status {
        200 => "OK",
        204 => "No Content",
        206 => "Partial Content",
        302 => "Found",
        400 => "Bad Request",
        401 => "Unauthorized",
        403 => "Forbidden",
        404 => "Not Found",
        405 => "Method Not Allowed",
        416 => "Range Not Satisfiable",
        _ => "Unknown",
    }
}

/// Writes the status line and headers (plus `Connection: close`) and the blank line.
pub fn write_head(
    out: &mut impl Write,
    status: u16,
    headers: &[(String, String)],
) -> io::Result<()> {
    let mut head = format!("HTTP/1.1 {status} {}\r\n", reason(status));
    for (k, v) in headers {
        head.push_str(&format!("{k}: {v}\r\n"));
    }
    head.push_str("Connection: close\r\n\r\n");
    out.write_all(head.as_bytes())
}

/// What a `Range` header asks of a body of `len` bytes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum RangeAsk {
    /// No header, or one this server does not serve ranges for (several ranges, other units):
    /// the whole body, 200.
    Whole,
    /// Bytes `start..end` (end exclusive), 206.
    Part(u64, u64),
    /// Starts at or past the end, 416.
    Unsatisfiable,
}

/// Reads `bytes=a-b`, `bytes=a-` and `bytes=-n` as RFC 9110 §14 defines them, an end past the
/// body being cut to it.
pub fn parse_range(header: Option<&str>, len: u64) -> RangeAsk {
    let Some(spec) = header.and_then(|h| h.trim().strip_prefix("bytes=")) else {
        return RangeAsk::Whole;
    };
    if spec.contains(',') {
        return RangeAsk::Whole;
    }
    let Some((a, b)) = spec.trim().split_once('-') else {
        return RangeAsk::Whole;
    };
    let (a, b) = (a.trim(), b.trim());
    let parsed = match (a.parse::<u64>(), b.parse::<u64>()) {
        (Ok(start), Ok(last)) if last >= start => Some((start, last.saturating_add(1))),
        (Ok(start), Err(_)) if b.is_empty() => Some((start, len)),
        (Err(_), Ok(n)) if a.is_empty() && n > 0 => Some((len.saturating_sub(n), len)),
        _ => None,
    };
    match parsed {
        None => RangeAsk::Whole,
        Some((start, _)) if start >= len => RangeAsk::Unsatisfiable,
        Some((start, end)) => RangeAsk::Part(start, end.min(len)),
    }
}
