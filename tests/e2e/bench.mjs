// `cargo xtask bench-web`: the page's size and speed, measured in headless Chromium on localhost.
// Prints each module's size (raw and gzip): the shell, which is the first download, and the panels,
// which load after its first paint; over 21 cold loads (enough for a median that a slow load or
// two on a shared machine does not move), the medians of navigation to the first
// result (the answer in the DOM, at the end of the shell's synchronous mount), to the first paint
// (which carries it) and to the whole page (the panels module mounted after that paint);
// and input-to-repainted-chart-and-curves latency (p50/p95 over 200 edits: the later of the
// stack's and the curves' marks). A benchmark, not a test: it asserts nothing about the figures.
import { test } from 'node:test';
import fs from 'node:fs';
import path from 'node:path';
import zlib from 'node:zlib';
import { serve, origin, launch, DIST, SUB_PATH } from './harness.mjs';

const percentile = (values, p) => {
  const sorted = [...values].sort((a, b) => a - b);
  return sorted[Math.min(sorted.length - 1, Math.floor((p / 100) * sorted.length))];
};

test('web benchmark', async () => {
  const gzip = (b) => zlib.gzipSync(b, { level: 9 }).length;
  const moduleFiles = (name) => ['_bg.wasm', '.js'].map((end) => fs.readFileSync(path.join(DIST, `${name}${end}`)));
  const server = await serve(DIST, [SUB_PATH]);
  const browser = await launch();
  const url = `${origin(server)}${SUB_PATH}?model=llama-3.1-8b&mode=qlora&batch=4`;

  const loads = [];
  const LOADS = 21;
  for (let i = 0; i < LOADS; i++) {
    const context = await browser.newContext();
    const page = await context.newPage();
    await page.goto(url);
    await page.waitForFunction(() => performance.getEntriesByName('vramfit:page-mounted').length > 0);
    // Marks on the page's own clock (0 = navigation start), so polling latency does not count.
    loads.push(await page.evaluate(() => {
      const at = (name) => performance.getEntriesByName(name)[0].startTime;
      const wasm = performance.getEntriesByType('resource').find((r) => r.name.endsWith('vramfit-web_bg.wasm'));
      const paint = performance.getEntriesByName('first-contentful-paint')[0].startTime;
      return { wasmFetched: wasm.responseEnd, start: at('vramfit:start'), result: at('vramfit:first-result'), chart: at('vramfit:chart-drawn'), paint, whole: at('vramfit:page-mounted') };
    }));
    await context.close();
  }

  const context = await browser.newContext();
  const page = await context.newPage();
  await page.goto(url);
  await page.waitForFunction(() => performance.getEntriesByName('vramfit:page-mounted').length > 0);
  const latencies = await page.evaluate(async () => {
    const input = document.querySelector('#f-batch');
    const canvas = document.querySelector('canvas#memory-chart');
    const times = [];
    const drawn = [];
    const marks = ['vramfit:chart-drawn', 'vramfit:curves-drawn'];
    for (let i = 0; i < 200; i++) {
      marks.forEach((m) => performance.clearMarks(m));
      const before = canvas.toDataURL().length;
      const start = performance.now();
      input.value = String((i % 16) + 1);
      input.dispatchEvent(new Event('input', { bubbles: true }));
      // The redraw is synchronous with the signal update; the next frame is when it is on screen.
      await new Promise((resolve) => requestAnimationFrame(() => resolve()));
      times.push(performance.now() - start);
      // Both curves and the stack redraw; the edit is on screen once the last of them has.
      const last = marks.map((m) => performance.getEntriesByName(m).at(-1)?.startTime ?? Infinity);
      drawn.push(Math.max(...last) - start);
      if (i === 0 && canvas.toDataURL().length === before) throw new Error('the chart did not change');
    }
    return { times, drawn };
  });
  await browser.close();
  server.close();

  const ms = (v) => `${v.toFixed(1)} ms`;
  const kib = (n) => `${(n / 1024).toFixed(1)} KiB`;
  for (const [name, what] of [['vramfit-web', 'shell'], ['vramfit-panels', 'panels (after the first paint)']]) {
    const [wasm, js] = moduleFiles(name);
    console.log(`${what}: wasm ${kib(wasm.length)} raw, ${kib(gzip(wasm))} gzip; js glue ${kib(js.length)} raw, ${kib(gzip(js))} gzip`);
  }
  // Everything the first result needs: the page, its stylesheet, the loader and the shell.
  const first = ['index.html', 'main.css', 'boot.js', 'vramfit-web.js', 'vramfit-web_bg.wasm'];
  const firstBytes = first.map((f) => gzip(fs.readFileSync(path.join(DIST, f)))).reduce((a, b) => a + b, 0);
  console.log(`first download (${first.join(', ')}): ${kib(firstBytes)} gzip`);
  const median = (key) => ms(percentile(loads.map((l) => l[key]), 50));
  console.log(`navigation → first result: median ${median('result')}, worst ${ms(Math.max(...loads.map((l) => l.result)))} (${LOADS} cold loads)`);
  console.log(`  before it: wasm fetched ${median('wasmFetched')}, Rust main started ${median('start')}`);
  console.log(`  after it: chart drawn ${median('chart')}, first paint ${median('paint')}, whole page mounted ${median('whole')}`);
  console.log(`input → chart and curves redrawn: p50 ${ms(percentile(latencies.drawn, 50))}, p95 ${ms(percentile(latencies.drawn, 95))} (200 edits)`);
  console.log(`input → next animation frame: p50 ${ms(percentile(latencies.times, 50))}, p95 ${ms(percentile(latencies.times, 95))}`);
});
