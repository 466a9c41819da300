//! The Hugging Face Hub, asked the way its own clients ask it (huggingface_hub's
//! `constants.py` and `file_download.py`): files at `{HF_ENDPOINT}/{repo}/resolve/{revision}/{file}`,
//! which redirect large files to a CDN; headers read with `Range` requests; errors told apart by
//! the `X-Error-Code` header (`RepoNotFound`, `RevisionNotFound`, `EntryNotFound`, `GatedRepo`).
//! `HF_TOKEN`, else the token file under `HF_HOME`, goes with every request to the Hub (never to
//! the CDN a file redirects to).

use super::{Files, HubRepo};
use std::path::PathBuf;
use std::time::Duration;
use vramfit_engine::model::{ModelInfo, RepoFile};

/// The most a small file (config.json, the index) may take.
const SMALL_FILE_LIMIT_BYTES: u64 = 16 << 20;

/// The Hub settings huggingface_hub reads from the environment.
pub struct Env {
    pub endpoint: String,
    pub token: Option<String>,
    pub offline: bool,
    hf_home: PathBuf,
    hub_cache: Option<PathBuf>,
}

impl Env {
    pub fn from_process() -> Env {
        let var = |k: &str| std::env::var(k).ok().filter(|v| !v.trim().is_empty());
        let home = var("HOME").map(PathBuf::from).unwrap_or_default();
        let hf_home = var("HF_HOME").map(PathBuf::from).unwrap_or_else(|| {
            var("XDG_CACHE_HOME")
                .map(PathBuf::from)
                .unwrap_or_else(|| home.join(".cache"))
                .join("huggingface")
        });
        let token_file = var("HF_TOKEN_PATH")
            .map(PathBuf::from)
            .unwrap_or_else(|| hf_home.join("token"));
        let token = var("HF_TOKEN").or_else(|| {
            std::fs::read_to_string(token_file)
                .ok()
                .map(|t| t.trim().to_string())
                .filter(|t| !t.is_empty())
        });
        let offline = var("HF_HUB_OFFLINE").is_some_and(|v| {
            matches!(
                v.trim().to_ascii_lowercase().as_str(),
                "1" | "true" | "yes" | "on"
            )
        });
        Env {
            endpoint: var("HF_ENDPOINT")
                .unwrap_or_else(|| "https://huggingface.co".to_string())
                .trim_end_matches('/')
                .to_string(),
            token,
            offline,
            hub_cache: var("HF_HUB_CACHE")
                .or_else(|| var("HUGGINGFACE_HUB_CACHE"))
                .map(PathBuf::from),
            hf_home,
        }
    }

    /// `HF_HUB_CACHE`, else `HF_HOME/hub`.
    pub fn hub_cache(&self) -> PathBuf {
        self.hub_cache
            .clone()
            .unwrap_or_else(|| self.hf_home.join("hub"))
    }
}

/// A repo on the Hub.
pub struct Remote {
    env: Env,
    repo: HubRepo,
    agent: ureq::Agent,
}

impl Remote {
    pub fn new(env: Env, repo: HubRepo) -> Result<Remote, String> {
        let agent = ureq::Agent::config_builder()
            // The status and `X-Error-Code` say what went wrong; read them rather than an error.
            .http_status_as_error(false)
            .timeout_global(Some(Duration::from_secs(60)))
            .user_agent(concat!("vramfit/", env!("CARGO_PKG_VERSION")))
            .build()
            .into();
        Ok(Remote { env, repo, agent })
    }

    fn get(
        &self,
        url: &str,
        range: Option<(u64, u64)>,
    ) -> Result<ureq::http::Response<ureq::Body>, String> {
        let mut request = self.agent.get(url);
        if let Some(token) = &self.env.token {
            request = request.header("Authorization", format!("Bearer {token}"));
        }
        if let Some((start, len)) = range {
            let end = start + len.max(1) - 1;
            request = request.header("Range", format!("bytes={start}-{end}"));
        }
        request.call().map_err(|e| match e {
            ureq::Error::HostNotFound | ureq::Error::ConnectionFailed | ureq::Error::Io(_) => {
                format!("cannot reach {} ({e}); with the files already in the HF cache, set HF_HUB_OFFLINE=1", self.env.endpoint)
            }
            e => format!("{url}: {e}"),
        })
    }

    fn file_url(&self, name: &str) -> String {
        format!(
            "{}/{}/resolve/{}/{name}",
            self.env.endpoint, self.repo.id, self.repo.revision
        )
    }

    /// What a failed answer means, in words a user can act on.
    fn failure(&self, name: &str, response: &ureq::http::Response<ureq::Body>) -> String {
        let code = response
            .headers()
            .get("x-error-code")
            .and_then(|v| v.to_str().ok())
            .unwrap_or("");
        let status = response.status().as_u16();
        let repo = &self.repo;
        match (status, code) {
            (_, "GatedRepo") => format!(
                "{} is gated: accept its terms at https://huggingface.co/{} and set HF_TOKEN to a token of that account ({})",
                repo.id,
                repo.id,
                if self.env.token.is_some() { "the token given has no access yet" } else { "no token was found in HF_TOKEN or the HF_HOME token file" }
            ),
            (_, "RepoNotFound") | (401, _) => format!(
                "{} is not on {} (or it is private: set HF_TOKEN)",
                repo.id, self.env.endpoint
            ),
            (_, "RevisionNotFound") => format!("{} has no revision {}", repo.id, repo.revision),
            _ => format!("{}: {name} answered HTTP {status}", repo),
        }
    }
}

impl Files for Remote {
    fn origin(&self) -> String {
        self.repo.to_string()
    }

    fn read(&self, name: &str, range: Option<(u64, u64)>) -> Result<Option<Vec<u8>>, String> {
        let mut response = self.get(&self.file_url(name), range)?;
        let limit = range.map_or(SMALL_FILE_LIMIT_BYTES, |(_, len)| len);
        match (response.status().as_u16(), range) {
            (200, None) | (206, Some(_)) => response
                .body_mut()
                .with_config()
                .limit(limit)
                .read_to_vec()
                .map(Some)
                .map_err(|e| format!("{}: {name}: {e}", self.repo)),
            // Dropped unread: a server that ignores Range would send the whole file.
            (200, Some(_)) => Err(format!(
                "{}: the server ignored the Range request for {name} and would send the whole file; vramfit reads headers only, so it stops here (is HF_ENDPOINT a mirror without Range support?)",
                self.repo
            )),
            (404, _)
                if response
                    .headers()
                    .get("x-error-code")
                    .is_some_and(|c| c == "EntryNotFound") =>
            {
                Ok(None)
            }
            _ => Err(self.failure(name, &response)),
        }
    }

    /// The model API's `siblings`; `blobs=true` adds each file's size (huggingface_hub's
    /// `model_info(files_metadata=True)`), which a GGUF repo's quant list shows.
    fn list(&self) -> Result<Vec<RepoFile>, String> {
        let url = format!(
            "{}/api/models/{}/revision/{}?blobs=true",
            self.env.endpoint, self.repo.id, self.repo.revision
        );
        let mut response = self.get(&url, None)?;
        if response.status().as_u16() != 200 {
            return Err(self.failure("the model API", &response));
        }
        let info = response
            .body_mut()
            .with_config()
            .limit(SMALL_FILE_LIMIT_BYTES)
            .read_to_vec()
            .map_err(|e| format!("{}: the model API: {e}", self.repo))?;
        let info = ModelInfo::parse(&info).map_err(|e| format!("{}: {e}", self.repo))?;
        Ok(info.files)
    }
}
