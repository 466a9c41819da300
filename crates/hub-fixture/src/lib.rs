//! A stand-in for the Hugging Face Hub, for tests: the Hub cannot be reached from where vramfit
//! is built and tested, and tests that read gigabytes would be slow anyway.
//!
//! - [`fixtures::all`]: checkpoints of each format vramfit reads (bf16 dense, MoE, fp8 blocks,
//!   AWQ, compressed-tensors, MXFP4, bitsandbytes NF4, split GGUF, a gated repository), built
//!   from real `config.json` files and checked against published sizes.
//! - [`Hub::start`]: serves them over HTTP the way the Hub does; [`Hub::stats`] counts requests
//!   and body bytes so a test can assert that only headers were read.
//! - [`materialize_dir`] and [`materialize_hf_cache`]: the same checkpoints as sparse local files.
//!
//! Bodies are produced on the fly: a weights file is its header followed by zeros, streamed in
//! chunks, never held in memory or on disk.
//!
//! # The protocol, and where each part was verified
//!
//! Sources: huggingface/huggingface_hub@ee0a4510f4bc15e26cb722be2efc2bdb01383ca0 (`hub` below).
//!
//! - `GET /api/models/{org}/{name}` and `…/revision/{rev}`: the model info JSON (`hub`
//!   `hf_api.py` `model_info` builds these paths, `expand` and `blobs=true` params); fields in
//!   [`api`]. `GET /api/models/{org}/{name}/auth-check` answers 200 or the gated error below.
//!   Model info itself is public for gated repositories, as on the Hub; only files are gated.
//! - `GET`/`HEAD /{org}/{name}/resolve/{rev}/{path}` (`hub` constants.py
//!   `HUGGINGFACE_CO_URL_TEMPLATE`), `rev` being `main` or the commit. Files kept in git (JSON)
//!   answer 200 with `ETag` and `X-Repo-Commit`. LFS files (safetensors, GGUF) answer `302 Found`
//!   with `Location` on [`Hub::cdn_endpoint`]`/cdn/{sha256}`, and `X-Repo-Commit`,
//!   `X-Linked-Etag`, `X-Linked-Size` (`hub` constants.py `HUGGINGFACE_HEADER_X_*`,
//!   file_download.py `get_hf_file_metadata` reads them off the redirect, preferring
//!   `X-Linked-Etag` to `ETag`). The CDN listens on a second port because huggingface_hub 2.x
//!   follows redirects that stay on the Hub's origin; checked with huggingface_hub 2.4.0 against
//!   this server (`model_info`, `get_hf_file_metadata`, `hf_hub_download` and its errors).
//! - Ranges: `bytes=a-b`, `bytes=a-`, `bytes=-n` give 206 with `Content-Range: bytes a-b/total`;
//!   a start past the end gives 416 with `Content-Range: bytes */total`.
//!   [`HubOptions::ignore_range`] answers 200 with the whole body instead.
//! - Errors carry `X-Error-Code`, `X-Error-Message` and a `{"error": …}` body, the three things
//!   `hub` utils/_http.py `hf_raise_for_status` and `_format` read: `RepoNotFound` (401 to an
//!   anonymous client, 404 to a signed-in one: "401 is misleading as it is returned for private
//!   and gated repos if user is not authenticated, missing repos"), `RevisionNotFound` (404),
//!   `EntryNotFound` (404), `GatedRepo` (401 without a token, with the message users' logs quote:
//!   "Access to model X is restricted. You must have access to it and be authenticated to access
//!   it. Please log in."; 403 for a signed-in user not approved, message as in `hub`
//!   tests/test_file_download.py). An unknown token gets 401 "Invalid credentials in
//!   Authorization header", the message `hf_raise_for_status` singles out.
//! - Cache layout: see [`materialize`].
//!
//! Tokens: [`fixtures::TEST_TOKEN`] is approved for every gated fixture,
//! [`fixtures::UNAPPROVED_TOKEN`] is a valid user without access.

pub mod api;
pub mod checkpoint;
pub mod files;
pub mod fixtures;
pub mod gguf_files;
pub mod http;
pub mod materialize;
pub mod model;
pub mod server;

pub use checkpoint::{Checkpoint, Gated, Published};
pub use files::RepoFile;
pub use materialize::{materialize_dir, materialize_hf_cache};
pub use server::{Hub, HubOptions, Logged, Stats};
