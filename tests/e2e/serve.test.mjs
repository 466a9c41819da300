// The page as `cargo xtask serve` serves it (trunk serve with Trunk.toml's [serve] settings), opened
// in headless Chromium: a newcomer's first page must log no console error, CSP violations
// included. Trunk writes its build to a scratch directory, never over the tested dist/.
import { test, after } from 'node:test';
import assert from 'node:assert/strict';
import fs from 'node:fs';
import net from 'node:net';
import os from 'node:os';
import path from 'node:path';
import { spawn } from 'node:child_process';
import { launch, openPage, ARTIFACTS } from './harness.mjs';

let trunk, browser, dist;

// Trunk stops before its scratch dist/ goes, so no build of its can write into a directory being removed.
after(async () => {
  await browser?.close();
  if (trunk && trunk.exitCode === null) {
    trunk.kill('SIGTERM');
    await new Promise((resolve) => trunk.once('exit', resolve));
  }
  if (dist) fs.rmSync(dist, { recursive: true, force: true });
});

function freePort() {
  return new Promise((resolve) => {
    const server = net.createServer();
    server.listen(0, '127.0.0.1', () => {
      const { port } = server.address();
      server.close(() => resolve(port));
    });
  });
}

/** Polls until the served page answers, or trunk exits, or the deadline passes. */
async function waitForServer(url, deadlineMs) {
  const end = Date.now() + deadlineMs;
  while (Date.now() < end) {
    if (trunk.exitCode !== null) throw new Error(`trunk serve exited with ${trunk.exitCode}`);
    try {
      const response = await fetch(url);
      if (response.ok) return response.text();
    } catch {
      // Not listening yet.
    }
    await new Promise((resolve) => setTimeout(resolve, 500));
  }
  throw new Error(`trunk serve did not answer at ${url} within ${deadlineMs / 1000} s`);
}

test('the page `cargo xtask serve` serves logs no console error', { timeout: 600_000 }, async () => {
  const port = await freePort();
  dist = fs.mkdtempSync(path.join(os.tmpdir(), 'vramfit-serve-'));
  trunk = spawn('trunk', ['serve', '--release', '--port', String(port), '--dist', dist], { stdio: ['ignore', 'inherit', 'inherit'] });
  const url = `http://127.0.0.1:${port}/`;
  const html = await waitForServer(url, 540_000);
  assert.doesNotMatch(html, /<script>(?!\s*<\/script>)/, 'no inline script is injected');
  browser = await launch();
  const context = await browser.newContext({ viewport: { width: 1280, height: 900 } });
  const problems = [];
  const page = await openPage(context, `${url}?model=llama-3.1-8b&mode=qlora`, problems);
  await page.waitForTimeout(1000);
  fs.mkdirSync(ARTIFACTS, { recursive: true });
  await page.screenshot({ path: path.join(ARTIFACTS, 'served-page.png') });
  assert.deepEqual(problems, []);
});
