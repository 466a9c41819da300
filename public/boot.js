// Loads the page's two WASM modules (src/lib.rs): the shell now, and the panels once the shell has
// painted its answer and asks for them. A separate file (not an inline script) so the page's CSP
// can forbid inline code.
import init from './vramfit-web.js';

addEventListener('vramfit:load-panels', () => {
  import('./vramfit-panels.js').then((panels) =>
    panels.default({ module_or_path: new URL('./vramfit-panels_bg.wasm', import.meta.url) }));
}, { once: true });

init({ module_or_path: new URL('./vramfit-web_bg.wasm', import.meta.url) });
