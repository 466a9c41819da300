// Loads the shell, then the panels when the shell asks (src/lib.rs). A file, not an inline
// script, so the CSP can forbid inline code.
import init from './vramfit-web.js';

addEventListener('vramfit:load-panels', () => {
  // The panels' stylesheet comes with them, not with the first download; they mount once both
  // have arrived (a sheet that fails to load leaves them unstyled, not absent).
  const css = Object.assign(document.createElement('link'), {
    rel: 'stylesheet',
    href: new URL('./panels.css', import.meta.url).href,
  });
  const styled = new Promise((done) => { css.onload = css.onerror = done; });
  document.head.append(css);
  Promise.all([import('./vramfit-panels.js'), styled]).then(([panels]) =>
    panels.default({ module_or_path: new URL('./vramfit-panels_bg.wasm', import.meta.url) }));
}, { once: true });

init({ module_or_path: new URL('./vramfit-web_bg.wasm', import.meta.url) });

// The shell reads a saved calibration from localStorage before its first render. A page's first
// touch of localStorage waits on the browser process to load the origin's storage; touched here,
// that wait falls while the shell's module downloads, and the shell's read finds it loaded.
try {
  void localStorage.length;
} catch {
  // Storage blocked (sandboxed frame, privacy settings): the shell goes without, as it would.
}
