// Loads the WASM module. A separate file (not an inline script) so the page's CSP can forbid inline code.
import init from './vramfit-web.js';

init({ module_or_path: new URL('./vramfit-web_bg.wasm', import.meta.url) });
