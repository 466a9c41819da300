//! The fixture Hub: a std-only HTTP/1.1 server (a thread per connection, `Connection: close`)
//! answering the routes huggingface_hub and the `--hf` readers use, with the Hub's headers and
//! error codes. Protocol details and where they were verified are in the crate documentation.

use std::collections::HashMap;
use std::io::{self, Write};
use std::net::{Shutdown, TcpListener, TcpStream};
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::thread::{self, JoinHandle};
use std::time::Duration;

use serde_json::json;

use crate::api::model_info;
use crate::checkpoint::{Checkpoint, Gated};
use crate::fixtures::{all, TEST_TOKEN, UNAPPROVED_TOKEN};
use crate::http::{parse_range, read_request, write_head, RangeAsk, Request};

/// How the server behaves.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct HubOptions {
    /// Port on 127.0.0.1; 0 picks a free one.
    pub port: u16,
    /// Answer ranged requests with 200 and the whole body, as a server without range support
    /// does, so a client can be tested to refuse rather than download gigabytes.
    pub ignore_range: bool,
}

/// One request as the server answered it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Logged {
    pub method: String,
    pub path: String,
    /// The `Range` header, as sent.
    pub range: Option<String>,
    pub status: u16,
    /// Body bytes actually written (less than the body when the client hung up).
    pub body_bytes: u64,
}

/// What the server has answered so far.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Stats {
    pub requests: u64,
    /// Body bytes written over all responses.
    pub body_bytes: u64,
    pub log: Vec<Logged>,
}

struct State {
    endpoint: String,
    cdn_endpoint: String,
    options: HubOptions,
    checkpoints: Vec<Checkpoint>,
    /// CDN path (an LFS file's etag) → (checkpoint, file).
    cdn: HashMap<String, (usize, usize)>,
    stats: Mutex<Stats>,
    /// Connections being answered: a body still going out after its client hung up is counted
    /// in the stats until its write fails.
    in_flight: AtomicUsize,
}

/// A running fixture Hub; dropping it stops the server.
pub struct Hub {
    state: Arc<State>,
    stop: Arc<AtomicBool>,
    accept: Vec<JoinHandle<()>>,
}

impl Hub {
    /// Serves [`all`] fixtures on 127.0.0.1: the Hub on `options.port`, its CDN on another free
    /// port. The CDN must be another origin, as the real one is: huggingface_hub follows a
    /// redirect to the same origin and would then read the CDN's headers instead of the
    /// redirect's `X-Repo-Commit`. Panics when a port cannot be bound (a test fixture has nothing
    /// better to do).
    pub fn start(options: HubOptions) -> Hub {
        let bind = |port| TcpListener::bind(("127.0.0.1", port)).expect("bind 127.0.0.1");
        let (hub, cdn_listener) = (bind(options.port), bind(0));
        let url = |l: &TcpListener| format!("http://{}", l.local_addr().expect("bound address"));
        let checkpoints = all();
        let mut cdn = HashMap::new();
        for (c, ckpt) in checkpoints.iter().enumerate() {
            for (f, file) in ckpt.files.iter().enumerate() {
                if file.is_lfs() {
                    cdn.insert(file.etag(), (c, f));
                }
            }
        }
        let state = Arc::new(State {
            endpoint: url(&hub),
            cdn_endpoint: url(&cdn_listener),
            options,
            checkpoints,
            cdn,
            stats: Mutex::new(Stats::default()),
            in_flight: AtomicUsize::new(0),
        });
        let stop = Arc::new(AtomicBool::new(false));
        let accept = [hub, cdn_listener]
            .into_iter()
            .map(|listener| {
                let (s, flag) = (Arc::clone(&state), Arc::clone(&stop));
                thread::spawn(move || accept_loop(listener, s, flag))
            })
            .collect();
        Hub {
            state,
            stop,
            accept,
        }
    }

    /// `http://127.0.0.1:PORT`, what `HF_ENDPOINT` is set to.
    pub fn endpoint(&self) -> &str {
        &self.state.endpoint
    }

    /// Where LFS redirects point: `http://127.0.0.1:OTHER_PORT`, serving `/cdn/{sha256}`.
    pub fn cdn_endpoint(&self) -> &str {
        &self.state.cdn_endpoint
    }

    /// A copy of the request counts and log so far (both origins).
    /// The stats once every connection has been answered or has failed (at most `timeout`
    /// later): what the clients really read, after bodies they hung up on are corrected.
    pub fn settled_stats(&self, timeout: std::time::Duration) -> Stats {
        let start = std::time::Instant::now();
        while self.state.in_flight.load(Ordering::SeqCst) > 0 && start.elapsed() < timeout {
            thread::sleep(std::time::Duration::from_millis(5));
        }
        self.stats()
    }

    pub fn stats(&self) -> Stats {
        self.state
            .stats
            .lock()
            .map(|s| s.clone())
            .unwrap_or_default()
    }

    /// Forgets the counts and log, so a test can measure one step.
    pub fn reset_stats(&self) {
        if let Ok(mut s) = self.state.stats.lock() {
            *s = Stats::default();
        }
    }
}

impl Drop for Hub {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::SeqCst);
        // Wakes the blocking accepts so they see the flag.
        for url in [&self.state.endpoint, &self.state.cdn_endpoint] {
            let _ = TcpStream::connect(url.trim_start_matches("http://"));
        }
        for accept in self.accept.drain(..) {
            let _ = accept.join();
        }
    }
}

fn accept_loop(listener: TcpListener, state: Arc<State>, stop: Arc<AtomicBool>) {
    for stream in listener.incoming() {
        if stop.load(Ordering::SeqCst) {
            break;
        }
        let Ok(stream) = stream else { continue };
        let state = Arc::clone(&state);
        state.in_flight.fetch_add(1, Ordering::SeqCst);
        thread::spawn(move || {
            serve(stream, &state);
            state.in_flight.fetch_sub(1, Ordering::SeqCst);
        });
    }
}

/// A response: status, headers, and a body that is bytes or a slice of a repository file.
struct Reply {
    status: u16,
    headers: Vec<(String, String)>,
    body: Body,
}

enum Body {
    Bytes(Vec<u8>),
    File {
        ckpt: usize,
        file: usize,
        start: u64,
        end: u64,
    },
}

impl Reply {
    fn header(mut self, k: &str, v: impl Into<String>) -> Reply {
        self.headers.push((k.to_string(), v.into()));
        self
    }
}

fn serve(mut stream: TcpStream, state: &State) {
    let _ = stream.set_read_timeout(Some(Duration::from_secs(10)));
    let Some(req) = read_request(&mut stream) else {
        return;
    };
    let reply = route(state, &req);
    let len = match &reply.body {
        Body::Bytes(b) => b.len() as u64,
        Body::File { start, end, .. } => end - start,
    };
    let mut headers = reply.headers;
    headers.push(("Content-Length".into(), len.to_string()));
    headers.extend(CORS.iter().map(|(k, v)| (k.to_string(), v.to_string())));
    let planned = if req.method == "HEAD" { 0 } else { len };
    // Logged before the body goes out, so a client that has read the body finds it in the
    // stats; corrected below when the client hangs up early.
    let entry = log(state, &req, reply.status, planned);
    let mut out = io::BufWriter::with_capacity(64 * 1024, &stream);
    let mut written = 0;
    if write_head(&mut out, reply.status, &headers).is_ok() && planned > 0 {
        written = match reply.body {
            Body::Bytes(b) => out.write_all(&b).map_or(0, |_| b.len() as u64),
            Body::File {
                ckpt,
                file,
                start,
                end,
            } => {
                let file = &state.checkpoints[ckpt].files[file];
                file.write_range(&mut out, start, end).0
            }
        };
    }
    if out.flush().is_err() {
        written = written.min(planned.saturating_sub(1));
    }
    drop(out);
    if written < planned {
        if let Ok(mut stats) = state.stats.lock() {
            // A reset in between leaves nothing to correct.
            if let Some(logged) = stats.log.get_mut(entry) {
                logged.body_bytes = written;
                stats.body_bytes = stats.body_bytes.saturating_sub(planned - written);
            }
        }
    }
    let _ = stream.shutdown(Shutdown::Write);
}

/// Counts a response and returns its index in the log.
fn log(state: &State, req: &Request, status: u16, body_bytes: u64) -> usize {
    let mut stats = state.stats.lock().unwrap_or_else(|e| e.into_inner());
    stats.requests += 1;
    stats.body_bytes += body_bytes;
    stats.log.push(Logged {
        method: req.method.clone(),
        path: req.path.clone(),
        range: req.header("range").map(str::to_string),
        status,
        body_bytes,
    });
    stats.log.len() - 1
}

/// Who the request says it is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Auth {
    Anonymous,
    Approved,
    Unapproved,
    Invalid,
}

fn auth(req: &Request) -> Auth {
    match req
        .header("authorization")
        .map(|h| h.strip_prefix("Bearer "))
    {
        None => Auth::Anonymous,
        Some(Some(TEST_TOKEN)) => Auth::Approved,
        Some(Some(UNAPPROVED_TOKEN)) => Auth::Unapproved,
        Some(_) => Auth::Invalid,
    }
}

/// What the Hub sends so a page on another origin can read its answers (the expose list as in
/// huggingface_hub's recorded Hub responses, tests/cassettes/*.yaml), plus a permissive
/// preflight answer for the `Range` and `Authorization` headers.
const CORS: [(&str, &str); 4] = [
    ("Access-Control-Allow-Origin", "*"),
    (
        "Access-Control-Expose-Headers",
        "X-Repo-Commit,X-Request-Id,X-Error-Code,X-Error-Message,X-Total-Count,ETag,Link,\
         Accept-Ranges,Content-Range,X-Linked-Size,X-Linked-ETag,Content-Length",
    ),
    (
        "Access-Control-Allow-Headers",
        "Authorization,Range,Content-Type",
    ),
    ("Access-Control-Allow-Methods", "GET,HEAD,OPTIONS"),
];

fn route(state: &State, req: &Request) -> Reply {
    if req.method == "OPTIONS" {
        return Reply {
            status: 204,
            headers: vec![],
            body: Body::Bytes(vec![]),
        };
    }
    if req.method != "GET" && req.method != "HEAD" {
        return error(405, None, "Method not allowed");
    }
    let parts: Vec<&str> = req.path.trim_start_matches('/').split('/').collect();
    if let ["cdn", etag] = parts[..] {
        return cdn(state, req, etag);
    }
    let auth = auth(req);
    if auth == Auth::Invalid {
        return error(401, None, "Invalid credentials in Authorization header");
    }
    match parts[..] {
        ["api", "models", org, name, ref rest @ ..] => api(state, req, auth, org, name, rest),
        [org, name, "resolve", rev, ref path @ ..] if !path.is_empty() => {
            resolve(state, req, auth, (org, name), rev, &path.join("/"))
        }
        _ => error(404, None, "Not Found"),
    }
}

/// The checkpoint `org/name`, or the Hub's answer for a repository it does not show: 401 to an
/// anonymous client (a private repo looks the same), 404 to a signed-in one, both with
/// `X-Error-Code: RepoNotFound` (huggingface_hub `hf_raise_for_status` treats them alike).
fn repo<'a>(
    state: &'a State,
    auth: Auth,
    org: &str,
    name: &str,
) -> Result<(usize, &'a Checkpoint), Reply> {
    let id = format!("{org}/{name}");
    state
        .checkpoints
        .iter()
        .enumerate()
        .find(|(_, c)| c.repo == id)
        .ok_or_else(|| {
            let status = if auth == Auth::Anonymous { 401 } else { 404 };
            error(status, Some("RepoNotFound"), "Repository not found")
        })
}

fn check_rev(ckpt: &Checkpoint, rev: &str) -> Result<(), Reply> {
    if rev == "main" || rev == ckpt.sha {
        Ok(())
    } else {
        Err(error(
            404,
            Some("RevisionNotFound"),
            &format!("Invalid rev id: {rev}"),
        ))
    }
}

/// A gated repository's files need an approved token: 401 without one, 403 for a user not on
/// the list, with the Hub's messages (as huggingface_hub's tests and users' logs quote them).
fn check_gate(ckpt: &Checkpoint, auth: Auth) -> Result<(), Reply> {
    if ckpt.gated == Gated::No || auth == Auth::Approved {
        return Ok(());
    }
    let repo = ckpt.repo;
    if auth == Auth::Unapproved {
        let msg = format!(
            "Access to model {repo} is restricted and you are not in the authorized list. \
             Visit https://huggingface.co/{repo} to ask for access."
        );
        return Err(error(403, Some("GatedRepo"), &msg));
    }
    let msg = format!(
        "Access to model {repo} is restricted. You must have access to it and be authenticated \
         to access it. Please log in."
    );
    Err(error(401, Some("GatedRepo"), &msg))
}

fn api(state: &State, req: &Request, auth: Auth, org: &str, name: &str, rest: &[&str]) -> Reply {
    let ckpt = match repo(state, auth, org, name) {
        Ok((_, c)) => c,
        Err(reply) => return reply,
    };
    let checked = match rest {
        [] => Ok(()),
        ["revision", rev] => check_rev(ckpt, rev),
        ["auth-check"] => {
            return check_gate(ckpt, auth).map_or_else(|r| r, |()| json_reply(json!({})))
        }
        _ => return error(404, None, "Not Found"),
    };
    if let Err(reply) = checked {
        return reply;
    }
    let expand = req.query_all("expand");
    let blobs = req.query_all("blobs").contains(&"true");
    match model_info(ckpt, &expand, blobs) {
        Ok(info) => json_reply(info),
        Err(bad) => error(400, None, &format!("Invalid expand value: {bad}")),
    }
}

fn resolve(
    state: &State,
    req: &Request,
    auth: Auth,
    repo_id: (&str, &str),
    rev: &str,
    path: &str,
) -> Reply {
    let (c, ckpt) = match repo(state, auth, repo_id.0, repo_id.1) {
        Ok(found) => found,
        Err(reply) => return reply,
    };
    if let Err(reply) = check_rev(ckpt, rev).and_then(|()| check_gate(ckpt, auth)) {
        return reply;
    }
    let Some(f) = ckpt.files.iter().position(|f| f.path == path) else {
        return error(404, Some("EntryNotFound"), "Entry not found");
    };
    let file = &ckpt.files[f];
    let etag = format!("\"{}\"", file.etag());
    if !file.is_lfs() {
        return file_reply(state, req, c, f)
            .header("ETag", etag)
            .header("X-Repo-Commit", ckpt.sha);
    }
    let location = format!("{}/cdn/{}", state.cdn_endpoint, file.etag());
    Reply {
        status: 302,
        headers: vec![],
        body: Body::Bytes(vec![]),
    }
    .header("Location", location)
    .header("ETag", etag.clone())
    .header("X-Repo-Commit", ckpt.sha)
    .header("X-Linked-Etag", etag)
    .header("X-Linked-Size", file.size.to_string())
}

fn cdn(state: &State, req: &Request, etag: &str) -> Reply {
    match state.cdn.get(etag) {
        Some(&(c, f)) => file_reply(state, req, c, f).header("ETag", format!("\"{etag}\"")),
        None => error(404, None, "Not Found"),
    }
}

/// A file's bytes, or the part `Range` asks for (206), or 416.
fn file_reply(state: &State, req: &Request, c: usize, f: usize) -> Reply {
    let size = state.checkpoints[c].files[f].size;
    let ask = if state.options.ignore_range {
        RangeAsk::Whole
    } else {
        parse_range(req.header("range"), size)
    };
    let (status, start, end) = match ask {
        RangeAsk::Whole => (200, 0, size),
        RangeAsk::Part(start, end) => (206, start, end),
        RangeAsk::Unsatisfiable => {
            return error(416, None, "Range Not Satisfiable")
                .header("Content-Range", format!("bytes */{size}"));
        }
    };
    let mut reply = Reply {
        status,
        headers: vec![],
        body: Body::File {
            ckpt: c,
            file: f,
            start,
            end,
        },
    }
    .header("Content-Type", "application/octet-stream")
    .header("Accept-Ranges", "bytes");
    if status == 206 {
        reply = reply.header("Content-Range", format!("bytes {start}-{}/{size}", end - 1));
    }
    reply
}

fn json_reply(value: serde_json::Value) -> Reply {
    Reply {
        status: 200,
        headers: vec![(
            "Content-Type".into(),
            "application/json; charset=utf-8".into(),
        )],
        body: Body::Bytes(value.to_string().into_bytes()),
    }
}

/// An error as the Hub sends it: `X-Error-Code` (when it has one), `X-Error-Message`, and a
/// JSON `{"error": message}` body.
fn error(status: u16, code: Option<&str>, message: &str) -> Reply {
    let mut reply = Reply {
        status,
        headers: vec![(
            "Content-Type".into(),
            "application/json; charset=utf-8".into(),
        )],
        body: Body::Bytes(json!({ "error": message }).to_string().into_bytes()),
    }
    .header("X-Error-Message", message);
    if let Some(code) = code {
        reply = reply.header("X-Error-Code", code);
    }
    reply
}
