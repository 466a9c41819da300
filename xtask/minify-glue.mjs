// Trunk's post-build hook (Trunk.toml): a release build's scripts, minified with terser: the
// wasm-bindgen glue, which Trunk's own JS minifier cannot parse (`export { … as default }`), and
// the loader, which Trunk copies as a file. Both are part of the first download
// (docs/performance.md).
import fs from 'node:fs';
import path from 'node:path';
import { minify } from 'terser';

if (process.env.TRUNK_PROFILE === 'release') {
  const staging = process.env.TRUNK_STAGING_DIR;
  for (const name of ['vramfit-web.js', 'vramfit-panels.js', 'boot.js']) {
    const file = path.join(staging, name);
    const { code } = await minify(fs.readFileSync(file, 'utf8'), { module: true, ecma: 2020 });
    fs.writeFileSync(file, code);
  }
}
