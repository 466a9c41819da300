//! The fixture Hub speaks the Hub's protocol, checked with a raw std client so that nothing
//! between the test and the bytes on the wire hides a mistake.

use std::io::{Read, Write};
use std::net::TcpStream;

use serde_json::Value;
use vramfit_hub_fixture::fixtures::{find, TEST_TOKEN, UNAPPROVED_TOKEN};
use vramfit_hub_fixture::{Hub, HubOptions};

struct Response {
    status: u16,
    headers: Vec<(String, String)>,
    body: Vec<u8>,
}

impl Response {
    fn header(&self, name: &str) -> Option<&str> {
        let name = name.to_ascii_lowercase();
        self.headers
            .iter()
            .find(|(k, _)| *k == name)
            .map(|(_, v)| v.as_str())
    }

    fn json(&self) -> Value {
        serde_json::from_slice(&self.body).unwrap()
    }
}

/// Sends one request and reads the whole response (the server closes the connection).
fn request(hub: &Hub, method: &str, target: &str, headers: &[(&str, &str)]) -> Response {
    let (origin, target) = match target.strip_prefix(hub.cdn_endpoint()) {
        Some(path) => (hub.cdn_endpoint(), path),
        None => (hub.endpoint(), target),
    };
    let addr = origin.trim_start_matches("http://");
    let mut stream = TcpStream::connect(addr).unwrap();
    let mut head = format!("{method} {target} HTTP/1.1\r\nHost: {addr}\r\n");
    for (k, v) in headers {
        head.push_str(&format!("{k}: {v}\r\n"));
    }
    stream.write_all(format!("{head}\r\n").as_bytes()).unwrap();
    let mut raw = Vec::new();
    stream.read_to_end(&mut raw).unwrap();
    let split = raw.windows(4).position(|w| w == b"\r\n\r\n").unwrap();
    let text = String::from_utf8(raw[..split].to_vec()).unwrap();
    let mut lines = text.lines();
    let status = lines
        .next()
        .unwrap()
        .split(' ')
        .nth(1)
        .unwrap()
        .parse()
        .unwrap();
    let headers = lines
        .filter_map(|l| l.split_once(':'))
        .map(|(k, v)| (k.trim().to_ascii_lowercase(), v.trim().to_string()))
        .collect();
    Response {
        status,
        headers,
        body: raw[split + 4..].to_vec(),
    }
}

fn get(hub: &Hub, target: &str) -> Response {
    request(hub, "GET", target, &[])
}

const QWEN: &str = "Qwen/Qwen3-30B-A3B";
const SHARD: &str = "model-00001-of-00016.safetensors";

#[test]
fn model_info_lists_files_and_the_expanded_fields() {
    let hub = Hub::start(HubOptions::default());
    let c = find(QWEN).unwrap();
    let info = get(&hub, &format!("/api/models/{QWEN}")).json();
    assert_eq!(info["id"], QWEN);
    assert_eq!(info["sha"], c.sha);
    assert_eq!(info["gated"], false);
    assert_eq!(info["siblings"].as_array().unwrap().len(), c.files.len());
    assert_eq!(
        info["siblings"][0],
        serde_json::json!({"rfilename": "config.json"})
    );
    assert_eq!(info["safetensors"]["total"], 30_532_122_624u64);
    assert_eq!(info["safetensors"]["parameters"]["BF16"], 30_532_122_624u64);
    let some = get(
        &hub,
        &format!("/api/models/{QWEN}?expand[]=safetensors&expand[]=sha"),
    )
    .json();
    let keys: Vec<_> = some.as_object().unwrap().keys().cloned().collect();
    assert_eq!(keys, ["_id", "id", "safetensors", "sha"]);
    let by_revision = get(
        &hub,
        &format!("/api/models/{QWEN}/revision/{}?expand=gated", c.sha),
    );
    assert_eq!(by_revision.json()["gated"], false);
    let bad = get(&hub, &format!("/api/models/{QWEN}?expand=nonsense"));
    assert_eq!(bad.status, 400);
}

#[test]
fn blobs_give_sibling_sizes_and_lfs_hashes() {
    let hub = Hub::start(HubOptions::default());
    let c = find(QWEN).unwrap();
    let info = get(&hub, &format!("/api/models/{QWEN}?blobs=true")).json();
    let shard = info["siblings"]
        .as_array()
        .unwrap()
        .iter()
        .find(|s| s["rfilename"] == SHARD)
        .unwrap();
    let file = c.file(SHARD).unwrap();
    assert_eq!(shard["size"], file.size);
    assert_eq!(shard["lfs"]["size"], file.size);
    assert_eq!(shard["lfs"]["sha256"], file.etag());
    assert_eq!(
        info["siblings"][0].get("lfs"),
        None,
        "config.json is not in LFS"
    );
}

#[test]
fn gguf_repos_report_the_gguf_field() {
    let hub = Hub::start(HubOptions::default());
    let repo = "vramfit-fixtures/Meta-Llama-3.1-8B-Instruct-GGUF";
    let info = get(&hub, &format!("/api/models/{repo}?expand[]=gguf")).json();
    assert_eq!(info["gguf"]["architecture"], "llama");
    assert_eq!(info["gguf"]["context_length"], 131_072);
    assert!(info["gguf"]["total"].as_u64().unwrap() > 8_000_000_000);
}

#[test]
fn small_files_answer_directly_with_etag_and_commit() {
    let hub = Hub::start(HubOptions::default());
    let c = find(QWEN).unwrap();
    let r = get(&hub, &format!("/{QWEN}/resolve/main/config.json"));
    assert_eq!(r.status, 200);
    assert_eq!(r.body, c.file("config.json").unwrap().head);
    assert_eq!(r.header("x-repo-commit"), Some(c.sha));
    let etag = format!("\"{}\"", c.file("config.json").unwrap().etag());
    assert_eq!(r.header("etag"), Some(etag.as_str()));
    let by_sha = get(
        &hub,
        &format!("/{QWEN}/resolve/{}/model.safetensors.index.json", c.sha),
    );
    assert_eq!(by_sha.status, 200);
    assert!(by_sha.json()["weight_map"].is_object());
}

#[test]
fn lfs_files_redirect_and_serve_ranges() {
    let hub = Hub::start(HubOptions::default());
    let c = find(QWEN).unwrap();
    let file = c.file(SHARD).unwrap();
    let head = request(&hub, "HEAD", &format!("/{QWEN}/resolve/main/{SHARD}"), &[]);
    assert_eq!(head.status, 302);
    assert_eq!(head.header("x-repo-commit"), Some(c.sha));
    assert_eq!(
        head.header("x-linked-size"),
        Some(file.size.to_string().as_str())
    );
    let etag = format!("\"{}\"", file.etag());
    assert_eq!(head.header("x-linked-etag"), Some(etag.as_str()));
    let location = head.header("location").unwrap().to_string();
    assert!(location.starts_with(&format!("{}/cdn/", hub.cdn_endpoint())));
    assert_ne!(
        hub.cdn_endpoint(),
        hub.endpoint(),
        "the CDN is another origin"
    );

    let first8 = request(&hub, "GET", &location, &[("Range", "bytes=0-7")]);
    assert_eq!(first8.status, 206);
    assert_eq!(first8.body, file.head[..8]);
    let total = file.size;
    assert_eq!(
        first8.header("content-range"),
        Some(format!("bytes 0-7/{total}").as_str())
    );
    let n = u64::from_le_bytes(first8.body.clone().try_into().unwrap());
    let header = request(
        &hub,
        "GET",
        &location,
        &[("Range", &format!("bytes=8-{}", 7 + n))],
    );
    assert_eq!(header.body.len() as u64, n);
    vramfit_safetensors::parse_header(&[first8.body, header.body].concat()).unwrap();

    let tail = request(
        &hub,
        "GET",
        &location,
        &[("Range", &format!("bytes={}-", total - 4))],
    );
    assert_eq!((tail.status, tail.body), (206, vec![0; 4]));
    let past = request(
        &hub,
        "GET",
        &location,
        &[("Range", &format!("bytes={total}-"))],
    );
    assert_eq!(past.status, 416);
    assert_eq!(
        past.header("content-range"),
        Some(format!("bytes */{total}").as_str())
    );
}

#[test]
fn errors_carry_the_hub_error_codes() {
    let hub = Hub::start(HubOptions::default());
    let auth = format!("Bearer {TEST_TOKEN}");
    let signed = [("Authorization", auth.as_str())];
    let cases = [
        (
            "/api/models/nobody/nothing",
            &[][..],
            401,
            Some("RepoNotFound"),
        ),
        (
            "/api/models/nobody/nothing",
            &signed[..],
            404,
            Some("RepoNotFound"),
        ),
        (
            "/nobody/nothing/resolve/main/config.json",
            &signed[..],
            404,
            Some("RepoNotFound"),
        ),
        (
            &format!("/{QWEN}/resolve/main/missing.json"),
            &[][..],
            404,
            Some("EntryNotFound"),
        ),
        (
            &format!("/{QWEN}/resolve/v9/config.json"),
            &[][..],
            404,
            Some("RevisionNotFound"),
        ),
        (
            &format!("/api/models/{QWEN}/revision/v9"),
            &[][..],
            404,
            Some("RevisionNotFound"),
        ),
    ];
    for (target, headers, status, code) in cases {
        let r = request(&hub, "GET", target, headers);
        assert_eq!(
            (r.status, r.header("x-error-code")),
            (status, code),
            "{target}"
        );
        assert!(r.json()["error"].is_string(), "{target}");
        assert!(r.header("x-error-message").is_some(), "{target}");
    }
}

#[test]
fn gated_files_need_an_approved_token() {
    let hub = Hub::start(HubOptions::default());
    let repo = "meta-llama/Llama-3.1-8B";
    let url = format!("/{repo}/resolve/main/config.json");
    let anonymous = get(&hub, &url);
    assert_eq!(
        (anonymous.status, anonymous.header("x-error-code")),
        (401, Some("GatedRepo"))
    );
    assert!(anonymous
        .header("x-error-message")
        .unwrap()
        .contains("Please log in"));
    let wrong = request(&hub, "GET", &url, &[("Authorization", "Bearer hf_wrong")]);
    assert_eq!(wrong.status, 401);
    let unapproved = format!("Bearer {UNAPPROVED_TOKEN}");
    let denied = request(&hub, "GET", &url, &[("Authorization", &unapproved)]);
    assert_eq!(
        (denied.status, denied.header("x-error-code")),
        (403, Some("GatedRepo"))
    );
    let ok = request(
        &hub,
        "GET",
        &url,
        &[("Authorization", &format!("Bearer {TEST_TOKEN}"))],
    );
    assert_eq!(ok.status, 200);
    // The model info is public, as on the Hub; the auth check is not.
    let info = get(&hub, &format!("/api/models/{repo}"));
    assert_eq!(
        (info.status, info.json()["gated"].clone()),
        (200, "manual".into())
    );
    let check = get(&hub, &format!("/api/models/{repo}/auth-check"));
    assert_eq!(
        (check.status, check.header("x-error-code")),
        (401, Some("GatedRepo"))
    );
}

#[test]
fn ignore_range_sends_everything_and_stats_count_it() {
    let hub = Hub::start(HubOptions {
        ignore_range: true,
        ..HubOptions::default()
    });
    let repo = "meta-llama/Llama-3.2-1B-Instruct";
    let size = find(repo).unwrap().file("config.json").unwrap().size;
    let auth = format!("Bearer {TEST_TOKEN}");
    let r = request(
        &hub,
        "GET",
        &format!("/{repo}/resolve/main/config.json"),
        &[("Authorization", &auth), ("Range", "bytes=0-7")],
    );
    assert_eq!((r.status, r.body.len() as u64), (200, size));
    let stats = hub.stats();
    assert_eq!((stats.requests, stats.body_bytes), (1, size));
    assert_eq!(stats.log[0].range.as_deref(), Some("bytes=0-7"));
}

/// A reader that wants only a shard's header makes three requests and receives the 8-byte
/// length plus the header, nothing of the gigabytes behind it.
#[test]
fn stats_show_that_only_headers_were_read() {
    let hub = Hub::start(HubOptions::default());
    let file = find(QWEN).unwrap().file(SHARD).unwrap().clone();
    let head = request(&hub, "HEAD", &format!("/{QWEN}/resolve/main/{SHARD}"), &[]);
    let location = head.header("location").unwrap().to_string();
    let first8 = request(&hub, "GET", &location, &[("Range", "bytes=0-7")]);
    let n = u64::from_le_bytes(first8.body.try_into().unwrap());
    request(
        &hub,
        "GET",
        &location,
        &[("Range", &format!("bytes=8-{}", 7 + n))],
    );
    let stats = hub.stats();
    assert_eq!(stats.requests, 3);
    assert_eq!(stats.body_bytes, 8 + n);
    assert_eq!(8 + n, file.head.len() as u64);
    assert!(file.size > 3_000_000_000);
    assert!(
        stats.log.iter().all(|l| l.status != 200),
        "no whole-body answer"
    );
    hub.reset_stats();
    assert_eq!(hub.stats().requests, 0);
}

#[test]
fn pages_on_other_origins_may_read_the_answers() {
    let hub = Hub::start(HubOptions::default());
    let preflight = request(
        &hub,
        "OPTIONS",
        &format!("/{QWEN}/resolve/main/{SHARD}"),
        &[],
    );
    assert_eq!(preflight.status, 204);
    assert!(preflight
        .header("access-control-allow-headers")
        .unwrap()
        .contains("Range"));
    let r = get(&hub, &format!("/{QWEN}/resolve/main/config.json"));
    assert_eq!(r.header("access-control-allow-origin"), Some("*"));
    let exposed = r.header("access-control-expose-headers").unwrap();
    for h in [
        "X-Repo-Commit",
        "X-Error-Code",
        "Content-Range",
        "X-Linked-Size",
    ] {
        assert!(exposed.contains(h), "{h}");
    }
}
