// End-to-end tests of "Read from the Hugging Face Hub" against the fixture Hub
// (`vramfit-hub-fixture serve`, the Hub on one port and its CDN on another, as the real one is on
// another origin). The page is served with its endpoint meta and CSP rewritten to those two
// origins. Nothing reaches the Hub before the click; a read repo's total equals
// `vramfit estimate --hf … --json` with HF_ENDPOINT; a GGUF repo lists its quants; a gated repo
// explains itself; Cancel stops a read; with the Hub gone the page says so; and the CSP is never
// violated.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { spawn, execFileSync } from 'node:child_process';
import { serve, origin, launch, total, mounted, BIN, DIST, ARTIFACTS, SUB_PATH } from './harness.mjs';

const QWEN = 'Qwen/Qwen3-30B-A3B';
const GGUF_REPO = 'vramfit-fixtures/Meta-Llama-3.1-8B-Instruct-GGUF';
const START = 'mode=inference&gpu=h100-80';

let hub, hubOrigin, cdnOrigin, server, browser, context, base, hfHome;

/** Starts the fixture Hub and resolves with its two origins, from what it prints. */
function startHub() {
  const bin = path.join(path.dirname(BIN), 'vramfit-hub-fixture');
  const child = spawn(bin, ['serve'], { stdio: ['ignore', 'pipe', 'pipe'] });
  let out = '', err = '';
  return new Promise((resolve, reject) => {
    const ready = () => {
      const endpoint = out.split('\n')[0].trim();
      const cdn = err.match(/redirect to (\S+)/)?.[1];
      if (out.includes('\n') && cdn) resolve({ child, endpoint, cdn });
    };
    child.stdout.on('data', (d) => { out += d; ready(); });
    child.stderr.on('data', (d) => { err += d; ready(); });
    child.on('error', reject);
    child.on('exit', (code) => reject(new Error(`the fixture Hub exited with ${code}: ${err}`)));
  });
}

/** index.html as a mirror host would serve it: the endpoint meta and connect-src name the fixture. */
function rewrittenIndex() {
  const html = fs.readFileSync(path.join(DIST, 'index.html'), 'utf8');
  const csp = html.replace(/connect-src [^;]+;/, `connect-src 'self' ${hubOrigin} ${cdnOrigin};`);
  assert.notEqual(csp, html, 'index.html has a connect-src to rewrite');
  // The built page is minified: its attributes may come in any order, unquoted.
  const meta = csp.replace(/<meta[^>]*\bname="?vramfit-hf-endpoint"?[^>]*>/, `<meta name="vramfit-hf-endpoint" content="${hubOrigin}">`);
  assert.notEqual(meta, csp, 'index.html has the endpoint meta to rewrite');
  return meta;
}

/** `vramfit estimate --json` reading `repo` from the fixture Hub, with a clean HF_HOME. */
function cliHub(repo, args = ['--mode', 'inference', '--gpu', 'h100-80']) {
  const env = { ...process.env, HF_ENDPOINT: hubOrigin, HF_HOME: hfHome };
  for (const key of ['HF_TOKEN', 'HF_HUB_OFFLINE', 'HF_HUB_CACHE', 'HF_TOKEN_PATH']) delete env[key];
  return JSON.parse(execFileSync(BIN, ['estimate', '--json', ...args, '--hf', repo], { encoding: 'utf8', env, stdio: ['ignore', 'pipe', 'ignore'] }));
}

before(async () => {
  ({ child: hub, endpoint: hubOrigin, cdn: cdnOrigin } = await startHub());
  hub.removeAllListeners('exit');
  hfHome = fs.mkdtempSync(path.join(os.tmpdir(), 'vramfit-hub-e2e-'));
  const index = rewrittenIndex();
  server = await serve(DIST, [SUB_PATH], { [SUB_PATH]: index, [`${SUB_PATH}index.html`]: index });
  base = `${origin(server)}${SUB_PATH}`;
  browser = await launch();
  context = await browser.newContext({ viewport: { width: 1280, height: 1000 } });
});

after(async () => {
  await browser?.close();
  server?.close();
  hub?.kill();
  if (hfHome) fs.rmSync(hfHome, { recursive: true, force: true });
});

/**
 * Opens the page recording what must never happen (page errors, requests to origins other than
 * its own and the Hub's, CSP violations) and every request to the Hub. Console errors are the
 * browser's own lines about refused connections in the offline test, so they are kept apart.
 */
async function open(url) {
  const seen = { problems: [], hub: [], consoleErrors: [] };
  const page = await context.newPage();
  await page.addInitScript(() => {
    window.cspViolations = [];
    document.addEventListener('securitypolicyviolation', (e) => window.cspViolations.push(`${e.violatedDirective} ${e.blockedURI}`));
  });
  const own = new URL(url).origin;
  page.on('pageerror', (e) => seen.problems.push(`page error: ${e.message}`));
  page.on('console', (m) => { if (m.type() === 'error') seen.consoleErrors.push(m.text()); });
  page.on('request', (r) => {
    const u = new URL(r.url());
    if ([hubOrigin, cdnOrigin].includes(u.origin)) seen.hub.push(r);
    else if (!['data:', 'blob:'].includes(u.protocol) && u.origin !== own) seen.problems.push(`request to ${r.url()}`);
  });
  await page.goto(url);
  await page.waitForSelector('[data-testid=total]', { timeout: 30_000 });
  await mounted(page);
  return { page, seen };
}

async function finish(page, seen) {
  assert.deepEqual(await page.evaluate(() => window.cspViolations), [], 'no CSP violation');
  assert.deepEqual(seen.problems, []);
  await page.close();
}

test('a repo id typed in the model picker is read on its click only, and the total is the CLI\'s', async () => {
  const { page, seen } = await open(`${base}?${START}`);
  await page.fill('#f-model', QWEN);
  const offer = page.locator('#model-opt-hub');
  assert.equal(await offer.textContent(), `Read ${QWEN} from the Hugging Face Hub`);
  await page.waitForTimeout(300);
  assert.deepEqual(seen.hub.map((r) => r.url()), [], 'nothing asked before the click');
  await offer.click();
  await page.waitForSelector('[data-testid=hf-summary]', { timeout: 30_000 });
  const summary = await page.textContent('[data-testid=hf-summary]');
  assert.match(summary, /61,064,245,248 B/);
  assert.match(summary, /30,532,122,624 parameters/);
  assert.equal(await total(page), cliHub(QWEN).total_bytes, 'page = vramfit estimate --hf');
  assert.ok(new URL(page.url()).searchParams.get('hf').startsWith(`${QWEN}@main`), 'the link names the repo');
  // Plain GETs with one Range each: no preflight, and every weights read is a slice.
  const hubRequests = seen.hub.map((r) => ({ method: r.method(), url: r.url(), headers: r.headers() }));
  assert.ok(hubRequests.every((r) => r.method === 'GET'), JSON.stringify(hubRequests.map((r) => r.method)));
  const files = hubRequests.filter((r) => r.url.includes('.safetensors') && !r.url.endsWith('.json'));
  assert.ok(files.length > 0 && files.every((r) => /^bytes=\d+-\d+$/.test(r.headers.range)), 'ranged reads');
  fs.mkdirSync(ARTIFACTS, { recursive: true });
  await page.locator('section.inputs').screenshot({ path: path.join(ARTIFACTS, 'hub-read.png') });
  await finish(page, seen);
});

test('?hf= fills the box and waits for the click; a GGUF repo lists its quants and reads the one picked', async () => {
  const { page, seen } = await open(`${base}?${START}&hf=${GGUF_REPO}@main`);
  assert.equal(await page.inputValue('[data-testid=hf-repo]'), `${GGUF_REPO}@main`);
  assert.equal(await page.getAttribute('[data-testid=hub-read]', 'open'), '');
  await page.waitForTimeout(300);
  assert.deepEqual(seen.hub.map((r) => r.url()), [], 'a link reads nothing by itself');
  await page.click('[data-testid=hf-read]');
  const quant = page.locator('[data-testid=hf-quants] button', { hasText: 'Q4_K_M' });
  await quant.waitFor({ timeout: 30_000 });
  assert.match(await quant.textContent(), /^Q4_K_M \(\d+\.\d\d GiB\)$/);
  await quant.click();
  await page.waitForSelector('[data-testid=hf-summary]', { timeout: 30_000 });
  assert.match(await page.textContent('[data-testid=hf-summary]'), /4,912,898,304 B/);
  assert.equal(await total(page), cliHub(`${GGUF_REPO}:Q4_K_M`).total_bytes, 'page = vramfit estimate --hf REPO:Q4_K_M');
  assert.ok(new URL(page.url()).searchParams.get('hf').endsWith(':Q4_K_M'));
  await finish(page, seen);
});

test('a gated repo is explained, with the paste path, and its files are not asked for', async () => {
  const { page, seen } = await open(`${base}?${START}`);
  const before = await total(page);
  await page.click('[data-testid=hub-read] summary');
  await page.fill('[data-testid=hf-repo]', 'https://huggingface.co/meta-llama/Llama-3.1-8B');
  await page.click('[data-testid=hf-read]');
  const error = await page.waitForSelector('[data-testid=hf-error]', { timeout: 30_000 });
  const text = await error.textContent();
  assert.match(text, /meta-llama\/Llama-3\.1-8B is gated/);
  assert.match(text, /Paste config\.json/);
  assert.ok(seen.hub.every((r) => r.url().includes('/api/models/')), 'only the model API was asked');
  assert.equal(await total(page), before, 'the estimate stays');
  await finish(page, seen);
});

test('Cancel stops a read, and the estimate stays', async () => {
  const { page, seen } = await open(`${base}?${START}`);
  const before = await total(page);
  await page.route(`${hubOrigin}/**`, async (route) => {
    await new Promise((r) => setTimeout(r, 3000));
    await route.continue().catch(() => {});
  });
  await page.click('[data-testid=hub-read] summary');
  await page.fill('[data-testid=hf-repo]', QWEN);
  await page.click('[data-testid=hf-read]');
  await page.waitForSelector('[data-testid=hf-cancel]:not([hidden])');
  await page.click('[data-testid=hf-cancel]');
  const error = await page.waitForSelector('[data-testid=hf-error]', { timeout: 10_000 });
  assert.equal(await error.textContent(), 'Cancelled.');
  assert.equal(await total(page), before);
  await page.unrouteAll({ behavior: 'ignoreErrors' });
  await finish(page, seen);
});

test('with the Hub unreachable the page says so and keeps working', async () => {
  hub.kill();
  await new Promise((r) => hub.once('exit', r));
  const { page, seen } = await open(`${base}?${START}`);
  const before = await total(page);
  await page.click('[data-testid=hub-read] summary');
  await page.fill('[data-testid=hf-repo]', QWEN);
  await page.click('[data-testid=hf-read]');
  const error = await page.waitForSelector('[data-testid=hf-error]', { timeout: 30_000 });
  assert.match(await error.textContent(), /^Cannot reach http:\/\/127\.0\.0\.1:\d+: this browser is offline/);
  assert.equal(await total(page), before);
  assert.ok(seen.consoleErrors.every((e) => /ERR_CONNECTION_REFUSED|Failed to load resource|Failed to fetch/.test(e)), seen.consoleErrors.join('\n'));
  await finish(page, seen);
});
