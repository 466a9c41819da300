// Loads the shell, then the panels when the shell asks (src/lib.rs). A file, not an inline
// script, so the CSP can forbid inline code.
import init from './vramfit-web.js';

addEventListener('vramfit:load-panels', () => {
  import('./vramfit-panels.js').then((panels) =>
    panels.default({ module_or_path: new URL('./vramfit-panels_bg.wasm', import.meta.url) }));
}, { once: true });

init({ module_or_path: new URL('./vramfit-web_bg.wasm', import.meta.url) });
