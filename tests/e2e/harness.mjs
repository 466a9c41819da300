// Shared pieces of the browser tests: a static server for dist/ (under a sub-path, like a real
// deployment), Chromium launch, the CLI as the oracle, and page-side pixel helpers.
import http from 'node:http';
import fs from 'node:fs';
import path from 'node:path';
import { execFileSync } from 'node:child_process';
import { chromium } from 'playwright-core';

export const DIST = process.env.VRAMFIT_DIST || 'dist';
export const BIN = process.env.VRAMFIT_BIN || 'target/debug/vramfit';
export const ARTIFACTS = 'test-artifacts';
export const SUB_PATH = '/tools/vram/';

const TYPES = {
  '.html': 'text/html; charset=utf-8',
  '.js': 'text/javascript',
  '.wasm': 'application/wasm',
  '.css': 'text/css',
  '.svg': 'image/svg+xml',
  '.json': 'application/json',
};

/** Serves `root` under each of `prefixes` on 127.0.0.1; `extra` maps exact paths to HTML bodies. */
export function serve(root, prefixes, extra = {}) {
  const server = http.createServer((req, res) => {
    const url = new URL(req.url, 'http://x');
    if (extra[url.pathname]) {
      res.writeHead(200, { 'content-type': TYPES['.html'] });
      res.end(extra[url.pathname]);
      return;
    }
    const prefix = prefixes.find((p) => url.pathname.startsWith(p));
    if (!prefix) {
      res.writeHead(404).end();
      return;
    }
    let rel = url.pathname.slice(prefix.length) || 'index.html';
    const file = path.join(root, path.normalize(rel).replace(/^(\.\.[/\\])+/, ''));
    fs.readFile(file, (err, body) => {
      if (err) {
        res.writeHead(404).end();
        return;
      }
      res.writeHead(200, { 'content-type': TYPES[path.extname(file)] || 'application/octet-stream' });
      res.end(body);
    });
  });
  return new Promise((resolve) => server.listen(0, '127.0.0.1', () => resolve(server)));
}

export function origin(server, host = '127.0.0.1') {
  return `http://${host}:${server.address().port}`;
}

export async function launch() {
  return chromium.launch({
    executablePath: process.env.CHROMIUM || '/usr/bin/chromium',
    timeout: 60_000,
    args: ['--no-sandbox', '--disable-gpu', '--disable-quic', '--disable-background-networking',
      '--disable-component-update', '--disable-sync', '--no-first-run'],
  });
}

/** `vramfit estimate --json` for the same key=value pairs the page reads from its URL. */
export function cliEstimate(query) {
  const args = ['estimate', '--json'];
  for (const [k, v] of new URLSearchParams(query)) args.push(`--${k}`, v);
  return JSON.parse(execFileSync(BIN, args, { encoding: 'utf8' }));
}

/** `vramfit fit --json` for the same pairs, with `--users` for a serving scenario. */
export function cliFit(query, users) {
  const args = ['fit', '--json'];
  for (const [k, v] of new URLSearchParams(query)) args.push(`--${k}`, v);
  if (users !== undefined) args.push('--users', String(users));
  return JSON.parse(execFileSync(BIN, args, { encoding: 'utf8' }));
}

/**
 * Puts `text` into a field at once and fires one `input` event, as a paste does. For the large
 * fixtures: Playwright's `fill` types through Chromium's insertText, which takes 20-30 s for
 * 70 KB on a two-core machine (the page itself handles the input in ~15 ms).
 */
/** The page's total per GPU in bytes, as the summary writes it. */
export async function total(page) {
  return Number(await page.getAttribute('[data-testid=total]', 'data-bytes'));
}

export async function paste(page, selector, text) {
  await page.$eval(selector, (field, value) => {
    field.value = value;
    field.dispatchEvent(new Event('input', { bubbles: true }));
  }, text);
}

/**
 * Opens a page and records what must never happen: console errors, uncaught exceptions, and
 * requests to any origin other than the page's own.
 */
export async function openPage(context, url, problems) {
  const page = await context.newPage();
  const own = new URL(url).origin;
  page.on('console', (m) => { if (m.type() === 'error') problems.push(`console error: ${m.text()}`); });
  page.on('pageerror', (e) => problems.push(`page error: ${e.message}`));
  page.on('request', (r) => {
    const u = new URL(r.url());
    if (!['data:', 'blob:'].includes(u.protocol) && u.origin !== own) problems.push(`request to ${r.url()}`);
  });
  await page.goto(url);
  await page.waitForSelector('[data-testid=total]', { timeout: 30_000 });
  await mounted(page);
  return page;
}

/**
 * Waits for the whole page: the answer comes first, and the panels below the first screen mount
 * once it has been painted.
 */
export async function mounted(page) {
  await page.waitForFunction(() => performance.getEntriesByName('vramfit:page-mounted').length > 0, null, { timeout: 30_000 });
}

/**
 * Per canvas column, how many pixels are strongly coloured. Axes, grid and text are grey and the
 * budget lines are a few pixels tall, so only bars give tall coloured columns.
 */
export async function colouredColumns(page, selector = 'canvas#memory-chart') {
  return page.evaluate((sel) => {
    const canvas = document.querySelector(sel);
    const ctx = canvas.getContext('2d');
    const { width, height } = canvas;
    const data = ctx.getImageData(0, 0, width, height).data;
    const counts = new Array(width).fill(0);
    for (let y = 0; y < height; y++) {
      for (let x = 0; x < width; x++) {
        const i = (y * width + x) * 4;
        const r = data[i], g = data[i + 1], b = data[i + 2];
        if (Math.max(r, g, b) - Math.min(r, g, b) > 60) counts[x]++;
      }
    }
    return { width, height, counts };
  }, selector);
}

/** Contiguous runs of columns whose coloured height exceeds `minHeight`: one run per bar. */
export function bars({ counts }, minHeight) {
  const runs = [];
  let start = -1;
  counts.forEach((c, x) => {
    if (c > minHeight && start < 0) start = x;
    if (c <= minHeight && start >= 0) { runs.push([start, x - 1]); start = -1; }
  });
  if (start >= 0) runs.push([start, counts.length - 1]);
  return runs;
}
