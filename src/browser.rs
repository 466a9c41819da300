//! The page's edges with the browser: the URL, history, clipboard, the parent frame, and the panic
//! banner. Every call tolerates a missing API (embedded frames, old browsers) instead of failing.

use wasm_bindgen::closure::Closure;
use wasm_bindgen::{JsCast, JsValue};

pub fn window() -> Option<web_sys::Window> {
    web_sys::window()
}

pub fn query() -> String {
    window()
        .and_then(|w| w.location().search().ok())
        .unwrap_or_default()
}

/// Writes the scenario's query into the address bar; `push` adds a history entry for Back.
pub fn set_query(query: &str, push: bool) {
    let Some(w) = window() else { return };
    let Ok(history) = w.history() else { return };
    let mut page_keys: Vec<String> = vramfit_engine::query::parse_query(&self::query())
        .into_iter()
        // `lesson` only seeds the first load; after that every field is explicit in the URL.
        .filter(|(k, _)| k != "lesson" && vramfit_engine::query::PAGE_KEYS.contains(&k.as_str()))
        .map(|(k, v)| format!("{k}={}", vramfit_engine::query::percent_encode(&v)))
        .collect();
    if !query.is_empty() {
        page_keys.push(query.to_string());
    }
    let url = format!("?{}", page_keys.join("&"));
    if url == self::query() || (url == "?" && self::query().is_empty()) {
        return;
    }
    let result = if push {
        history.push_state_with_url(&JsValue::NULL, "", Some(&url))
    } else {
        history.replace_state_with_url(&JsValue::NULL, "", Some(&url))
    };
    let _ = result;
}

pub fn href() -> String {
    window()
        .and_then(|w| w.location().href().ok())
        .unwrap_or_default()
}

/// Saves `url` (a data: URL) as a file, through a temporary download link.
pub fn download(url: &str, filename: &str) {
    let Some(document) = window().and_then(|w| w.document()) else {
        return;
    };
    if let Some(link) = document
        .create_element("a")
        .ok()
        .and_then(|a| a.dyn_into::<web_sys::HtmlAnchorElement>().ok())
    {
        link.set_href(url);
        link.set_download(filename);
        link.click();
    }
}

/// This browser's saved calibration (the `context` field), used when the URL does not set one.
/// Storage can be missing or blocked (embedded frames, private modes): then nothing is saved.
const CORRECTION_KEY: &str = "vramfit.context";

pub fn saved_correction() -> Option<String> {
    window()?
        .local_storage()
        .ok()??
        .get_item(CORRECTION_KEY)
        .ok()?
}

pub fn save_correction(value: Option<&str>) {
    let Some(storage) = window().and_then(|w| w.local_storage().ok().flatten()) else {
        return;
    };
    let _ = match value {
        Some(v) => storage.set_item(CORRECTION_KEY, v),
        None => storage.remove_item(CORRECTION_KEY),
    };
}

/// Reads the first file dropped on a paste area as text, refusing anything over 1 MiB before
/// reading it (the parsers refuse larger input anyway).
pub fn read_dropped_file(
    event: &web_sys::DragEvent,
    on_text: impl FnOnce(Result<String, String>) + 'static,
) {
    event.prevent_default();
    let Some(file) = event
        .data_transfer()
        .and_then(|d| d.files())
        .and_then(|f| f.get(0))
    else {
        return;
    };
    if file.size() > (1 << 20) as f64 {
        on_text(Err(format!(
            "{} is over 1 MiB; drop the text nvidia-smi printed",
            file.name()
        )));
        return;
    }
    let Ok(reader) = web_sys::FileReader::new() else {
        return;
    };
    let handle = reader.clone();
    let on_load = Closure::once_into_js(move || {
        let text = handle.result().ok().and_then(|r| r.as_string());
        on_text(text.ok_or_else(|| "the dropped file is not text".to_string()));
    });
    reader.set_onload(Some(on_load.unchecked_ref()));
    let _ = reader.read_as_text(&file);
}

/// Reads the first `len` bytes of `file` (or all of it, when shorter) without reading the rest: a
/// slice of the file, so a 40 GB model costs what its header costs. Nothing leaves the browser.
pub fn read_file_start(
    file: &web_sys::File,
    len: u64,
    on_bytes: impl FnOnce(Result<Vec<u8>, String>) + 'static,
) {
    let (Ok(slice), Ok(reader)) = (
        file.slice_with_f64_and_f64(0.0, len as f64),
        web_sys::FileReader::new(),
    ) else {
        on_bytes(Err("this browser cannot read part of a file".to_string()));
        return;
    };
    let handle = reader.clone();
    // `loadend` comes after a success and after a failure; only a success leaves an ArrayBuffer.
    let on_end = Closure::once_into_js(move || {
        let bytes = handle
            .result()
            .ok()
            .filter(|r| r.is_instance_of::<web_sys::js_sys::ArrayBuffer>())
            .map(|buffer| web_sys::js_sys::Uint8Array::new(&buffer).to_vec());
        on_bytes(bytes.ok_or_else(|| "the browser could not read the file".to_string()));
    });
    reader.set_onloadend(Some(on_end.unchecked_ref()));
    if reader.read_as_array_buffer(&slice).is_err() {
        reader.set_onloadend(None);
    }
}

pub fn copy_text(text: &str) {
    if let Some(w) = window() {
        let _ = w.navigator().clipboard().write_text(text);
    }
}

/// When the page is embedded, tells the embedding page our height whenever it changes, so its
/// iframe can fit the content without scrolling. A `ResizeObserver` calls back after layout, so
/// reading the height there never forces an extra one (reading it during the mount cost ~100 ms).
pub fn report_height_to_parent() {
    let Some(w) = window() else { return };
    let Ok(Some(parent)) = w.parent() else { return };
    if parent == w {
        return;
    }
    let Some(root) = w.document().and_then(|d| d.document_element()) else {
        return;
    };
    let observed = root.clone();
    let on_resize = Closure::<dyn FnMut()>::new(move || {
        let _ = parent.post_message(&js_sys_object(observed.scroll_height()), "*");
    });
    if let Ok(observer) = web_sys::ResizeObserver::new(on_resize.as_ref().unchecked_ref()) {
        observer.observe(&root);
        // Both live as long as the page.
        on_resize.forget();
    }
}

fn js_sys_object(height: i32) -> JsValue {
    // A JSON string keeps the message trivially readable by any parent without structured-clone quirks.
    JsValue::from_str(&format!(
        "{{\"type\":\"vramfit:height\",\"height\":{height}}}"
    ))
}

/// A panic in WASM would leave a dead page; show a visible banner instead, and keep the console log.
pub fn install_panic_banner() {
    std::panic::set_hook(Box::new(|info| {
        web_sys::console::error_1(&JsValue::from_str(&info.to_string()));
        if let Some(document) = window().and_then(|w| w.document()) {
            if let Ok(banner) = document.create_element("div") {
                banner.set_class_name("panic-banner");
                banner.set_attribute("role", "alert").ok();
                banner.set_text_content(Some(
                    "vramfit hit an internal error. Reload the page; your scenario is in the URL.",
                ));
                if let Some(body) = document.body() {
                    let _ = body.prepend_with_node_1(&banner);
                }
            }
        }
    }));
}

/// Calls `then` once the page's first frame has been painted, from a task an animation frame
/// queues: such a task runs after that frame. A frame that never comes (a hidden tab, an iframe
/// the browser throttles off screen) must not hold the rest of the page back, so a timer also
/// calls it; `then` must tolerate a second call.
pub fn after_first_paint(then: impl Fn() + Clone + 'static) {
    use leptos::prelude::{request_animation_frame, set_timeout};
    use std::time::Duration;
    let fallback = then.clone();
    request_animation_frame(move || set_timeout(then, Duration::ZERO));
    set_timeout(fallback, Duration::from_millis(500));
}

/// Adds a mark to the page's performance timeline, which `cargo xtask bench-web` reads.
pub fn mark(name: &str) {
    if let Some(performance) = web_sys::window().and_then(|w| w.performance()) {
        let _ = performance.mark(name);
    }
}

/// Where the Hub is: huggingface.co, or the mirror a host names in
/// `<meta name="vramfit-hf-endpoint">` (whose origin it must also add to the CSP's connect-src).
pub fn hub_endpoint() -> String {
    window()
        .and_then(|w| w.document())
        .and_then(|d| {
            d.query_selector("meta[name=vramfit-hf-endpoint]")
                .ok()
                .flatten()
        })
        .and_then(|m| m.get_attribute("content"))
        .map(|c| c.trim().trim_end_matches('/').to_string())
        .filter(|c| !c.is_empty())
        .unwrap_or_else(|| "https://huggingface.co".to_string())
}

/// Sets (or with `None` removes) a page key of the URL, leaving the scenario's keys as they are.
pub fn set_page_key(key: &str, value: Option<&str>) {
    let (Some(w), Ok(params)) = (
        window(),
        web_sys::UrlSearchParams::new_with_str(&self::query()),
    ) else {
        return;
    };
    match value {
        Some(v) => params.set(key, v),
        None => params.delete(key),
    }
    let query = String::from(params.to_string());
    // `/` and `:` are safe in a query; left encoded, a shared link is harder to read.
    let query = query
        .replace("%2F", "/")
        .replace("%3A", ":")
        .replace("%40", "@");
    if let Ok(history) = w.history() {
        let _ = history.replace_state_with_url(&JsValue::NULL, "", Some(&format!("?{query}")));
    }
}

/// What a GET gave: its status, the Hub's `X-Error-Code`, and the body unless it was left unread.
pub struct Got {
    pub status: u16,
    pub error_code: Option<String>,
    pub body: Vec<u8>,
}

/// Why a GET gave no answer.
pub enum GetFailed {
    Aborted,
    /// The network refused: offline, a filter, or the CSP.
    Unreachable,
    /// A server that ignored `Range` and started sending the whole file; it is left unread.
    RangeIgnored,
}

/// A GET under way.
pub struct Pending {
    promise: Option<web_sys::js_sys::Promise>,
    ranged: bool,
}

/// Starts a plain GET of `url`, or of `len` bytes from `start` with one `Range: bytes=a-b`
/// header: no other header, so the browser sends no CORS preflight (a simple range is a
/// CORS-safelisted header). The request goes out now, so several started one after the other
/// run side by side; `signal` cancels it.
pub fn get(url: &str, range: Option<(u64, u64)>, signal: &web_sys::AbortSignal) -> Pending {
    let init = web_sys::RequestInit::new();
    init.set_signal(Some(signal));
    if let Some((start, len)) = range {
        if let Ok(headers) = web_sys::Headers::new() {
            let end = start + len.max(1) - 1;
            let _ = headers.set("Range", &format!("bytes={start}-{end}"));
            init.set_headers(&headers);
        }
    }
    Pending {
        promise: window().map(|w| w.fetch_with_str_and_init(url, &init)),
        ranged: range.is_some(),
    }
}

impl Pending {
    /// Its status, `X-Error-Code` and body.
    pub async fn answer(self, signal: &web_sys::AbortSignal) -> Result<Got, GetFailed> {
        use wasm_bindgen_futures::JsFuture;
        let failed = || match signal.aborted() {
            true => GetFailed::Aborted,
            false => GetFailed::Unreachable,
        };
        let promise = self.promise.ok_or(GetFailed::Unreachable)?;
        let response: web_sys::Response = JsFuture::from(promise)
            .await
            .map_err(|_| failed())?
            .unchecked_into();
        let status = response.status();
        if self.ranged && status == 200 {
            return Err(GetFailed::RangeIgnored);
        }
        let error_code = response.headers().get("x-error-code").ok().flatten();
        let buffer = response.array_buffer().map_err(|_| failed())?;
        let buffer = JsFuture::from(buffer).await.map_err(|_| failed())?;
        Ok(Got {
            status,
            error_code,
            body: web_sys::js_sys::Uint8Array::new(&buffer).to_vec(),
        })
    }
}
