// End-to-end tests of the page's speed parts, with the CLI as the oracle: the speed panel's
// figures, its output-vs-concurrency table and benchmark command, the serving panel's launch
// command, and a pasted llama-bench or vllm bench serve run, each as `vramfit estimate --json` or
// `vramfit parse-bench --json` gives them for the same scenario. Copy buttons are checked through the
// clipboard itself.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import fs from 'node:fs';
import path from 'node:path';
import { execFileSync } from 'node:child_process';
import { serve, origin, launch, cliEstimate, openPage, paste, BIN, DIST, ARTIFACTS, SUB_PATH } from './harness.mjs';

const LLAMA_CPP = 'model=llama-3.1-8b&mode=inference&runtime=llama.cpp&gpu=rtx-4090&quant=Q4_K_M';
const VLLM = 'model=llama-3.1-8b&mode=inference&runtime=vllm&gpu=h100-80&max-model-len=16384&gpu-memory-utilization=0.95';
const SGLANG = 'model=qwen2.5-7b&mode=inference&runtime=sglang&gpu=l40s&max-model-len=32768';
// A Mac whose maker states its bandwidth but no tensor throughput: decode, and no prefill.
const MAC = 'model=llama-3.1-8b&mode=inference&runtime=llama.cpp&gpu=m2-pro-16&quant=Q4_K_M';
const BENCH = 'model=qwen2.5-7b&mode=inference&runtime=llama.cpp&quant=Q4_K_M&gpu=rtx-4080';
const BENCH_FILE = 'crates/bench/tests/fixtures/readme.json';
const VLLM_BENCH_FILE = 'crates/bench/tests/fixtures/vllm-pr35777.txt';

let server, browser, context, base, problems;

before(async () => {
  fs.mkdirSync(ARTIFACTS, { recursive: true });
  server = await serve(DIST, [SUB_PATH]);
  base = `${origin(server)}${SUB_PATH}`;
  browser = await launch();
  context = await browser.newContext({ viewport: { width: 1280, height: 1000 }, permissions: ['clipboard-read', 'clipboard-write'] });
  problems = [];
});

after(async () => {
  await browser?.close();
  server?.close();
});

/** Equal to within the last bits: the page runs the engine in wasm, the CLI natively. */
function near(actual, expected, what) {
  if (expected === null) return assert.equal(actual, null, `${what}: none`);
  assert.ok(Math.abs(actual - expected) <= 1e-9 * Math.abs(expected), `${what}: page ${actual}, CLI ${expected}`);
}

/** Clicks a copy button and returns what reached the clipboard. */
async function copied(page, testid) {
  await page.evaluate(() => navigator.clipboard.writeText(''));
  await page.click(`[data-testid=${testid}-copy]`);
  await page.waitForFunction((id) => document.querySelector(`[data-testid=${id}-copy]`).textContent === 'Copied', testid);
  return page.evaluate(() => navigator.clipboard.readText());
}

async function speedShown(page) {
  return page.evaluate(() => {
    const at = (id) => document.querySelector(`[data-testid=${id}]`);
    const value = (id) => (at(id).dataset.value === undefined ? null : Number(at(id).dataset.value));
    return {
      output: value('speed-output'),
      prefill: value('speed-prefill'),
      decode: value('speed-decode'),
      ttft: value('speed-ttft'),
      low: Number(at('speed-band').dataset.low),
      high: Number(at('speed-band').dataset.high),
      basis: at('speed-basis').textContent,
      measure: at('speed-measure')?.textContent ?? null,
    };
  });
}

test('the speed panel shows the CLI\'s speed, by default, and copies its benchmark command', async () => {
  for (const [name, query] of [['llamacpp', LLAMA_CPP], ['vllm', VLLM], ['sglang', SGLANG], ['mac', MAC]]) {
    const { speed } = cliEstimate(query);
    assert.ok(speed, `${name}: the CLI has a speed`);
    const page = await openPage(context, `${base}?${query}`, problems);
    await page.waitForSelector('[data-testid=speed-output]');
    const shown = await speedShown(page);
    near(shown.output, speed.output_tokens_per_s, `${name} output`);
    near(shown.prefill, speed.prefill_tokens_per_s, `${name} prefill`);
    near(shown.decode, speed.decode_tokens_per_s, `${name} decode`);
    near(shown.ttft, speed.ttft_s, `${name} ttft`);
    near(shown.low, speed.low, `${name} low`);
    near(shown.high, speed.high, `${name} high`);
    assert.equal(shown.basis, speed.basis, `${name}: the basis in words`);
    assert.equal(shown.measure, speed.measure, `${name}: the benchmark command`);
    if (speed.prefill_tokens_per_s === null) {
      assert.match(await page.textContent('[data-testid=speed-prefill]'), /^not known: /, `${name}: says why there is no prefill`);
    }
    if (speed.measure) assert.equal(await copied(page, 'speed-measure'), speed.measure, `${name}: the copied command`);
    await page.locator('section.speed').screenshot({ path: path.join(ARTIFACTS, `speed-${name}.png`) });
    await page.close();
  }
  assert.deepEqual(problems, []);
});

test('a shared pool\'s output vs concurrency is the CLI\'s at each concurrency, 1, 2, 4, … up to the pool\'s', async () => {
  for (const [name, query] of [['vllm', VLLM], ['sglang', SGLANG]]) {
    const top = Math.floor(cliEstimate(query).serving.max_concurrency);
    const points = [];
    for (let n = 1; n <= top; n *= 2) points.push(n);
    if (points.at(-1) !== top) points.push(top);
    const page = await openPage(context, `${base}?${query}`, problems);
    await page.waitForSelector('[data-testid=speed-curve]');
    const rows = await page.$$eval('[data-testid=speed-curve] tr[data-concurrency]', (rows) =>
      rows.map((r) => ({ n: Number(r.dataset.concurrency), output: Number(r.dataset.output), decode: Number(r.dataset.decode) })));
    assert.deepEqual(rows.map((r) => r.n), points, `${name}: the points`);
    for (const row of rows) {
      const { speed } = cliEstimate(`${query}&concurrency=${row.n}`);
      near(row.output, speed.output_tokens_per_s, `${name} output at ${row.n}`);
      near(row.decode, speed.decode_tokens_per_s, `${name} each request at ${row.n}`);
    }
    await page.close();
  }
  // llama.cpp serves its slots: no curve.
  const page = await openPage(context, `${base}?${LLAMA_CPP}`, problems);
  await page.waitForSelector('[data-testid=speed-output]');
  assert.equal(await page.$('[data-testid=speed-curve]'), null);
  await page.close();
  assert.deepEqual(problems, []);
});

test('without a speed the panel says why: the CLI\'s note for a card without a datasheet, and training it does not time', async () => {
  const noSheet = 'model=llama-3.1-8b&mode=inference&gpu=a10g&quant=Q4_K_M&runtime=llama.cpp';
  const expected = cliEstimate(noSheet);
  assert.equal(expected.speed, null);
  const note = expected.notes.find((n) => n.startsWith('No speed estimate'));
  assert.ok(note, 'the CLI says why');
  const page = await openPage(context, `${base}?${noSheet}`, problems);
  assert.equal(await (await page.waitForSelector('[data-testid=speed-none]')).textContent(), note);
  // A B200's sheet gives no SMs or clock, so no fp32 peak.
  const fp32 = 'model=llama-3.1-8b&mode=full&gpu=b200&act-dtype=fp32';
  const fp32Note = cliEstimate(fp32).notes.find((n) => n.startsWith('No training speed estimate'));
  assert.ok(fp32Note, 'the CLI says why');
  await page.goto(`${base}?${fp32}`);
  assert.equal(await (await page.waitForSelector('[data-testid=speed-none]')).textContent(), fp32Note);
  await page.close();
  assert.deepEqual(problems, []);
});

test('a training scenario shows the step time, tokens/s and basis estimate --json gives', async () => {
  const query = 'model=llama-3.1-8b&mode=qlora&gpu=t4';
  const { speed } = cliEstimate(query);
  const page = await openPage(context, `${base}?${query}`, problems);
  const step = await page.waitForSelector('[data-testid=speed-train-step]');
  assert.equal(Number(await step.getAttribute('data-value')), speed.train_step_s);
  const tokens = await page.$('[data-testid=speed-train-tokens]');
  assert.equal(Number(await tokens.getAttribute('data-value')), speed.train_tokens_per_s);
  assert.equal(await (await page.$('[data-testid=speed-basis]')).textContent(), speed.basis);
  await page.locator('section.speed').screenshot({ path: path.join(ARTIFACTS, 'speed-training.png') });
  await page.close();
  assert.deepEqual(problems, []);
});

test('the serving panel shows the launch command vramfit estimate writes, and copies it', async () => {
  for (const [name, query] of [['vllm', VLLM], ['sglang', SGLANG], ['llamacpp', LLAMA_CPP]]) {
    const { command } = cliEstimate(query).serving;
    assert.ok(command, `${name}: the CLI writes a command`);
    const page = await openPage(context, `${base}?${query}`, problems);
    assert.equal(await (await page.waitForSelector('[data-testid=launch-command]')).textContent(), command);
    assert.equal(await copied(page, 'launch-command'), command, `${name}: the copied command`);
    await page.locator('section.serving .launch').screenshot({ path: path.join(ARTIFACTS, `serving-command-${name}.png`) });
    await page.close();
  }
  // A setting the runtime has no flag for: no command, and the estimate's note says why.
  const int8 = `${VLLM}&kv-dtype=int8`;
  const expected = cliEstimate(int8);
  assert.equal(expected.serving.command, null);
  const page = await openPage(context, `${base}?${int8}`, problems);
  const why = await (await page.waitForSelector('[data-testid=launch-none]')).textContent();
  assert.equal(why, expected.notes.find((n) => n.startsWith('No launch command')));
  await page.close();
  assert.deepEqual(problems, []);
});

test('the speed panel at 360 px, light and dark: no horizontal scroll', async () => {
  for (const colorScheme of ['light', 'dark']) {
    const narrow = await browser.newContext({ viewport: { width: 360, height: 780 }, colorScheme, deviceScaleFactor: 2 });
    const page = await openPage(narrow, `${base}?${VLLM}`, problems);
    await page.waitForSelector('[data-testid=speed-curve]');
    await page.click('details.bench-paste summary');
    await paste(page, '#bench-paste', fs.readFileSync(BENCH_FILE, 'utf8'));
    await page.waitForSelector('[data-testid=bench-check]');
    const overflow = await page.evaluate(() => document.documentElement.scrollWidth - window.innerWidth);
    assert.ok(overflow <= 1, `${colorScheme}: no horizontal scroll at 360 px (overflow ${overflow})`);
    for (const selector of ['section.speed', 'section.serving']) {
      const inside = await page.$eval(selector, (e) => e.scrollWidth - e.clientWidth);
      assert.ok(inside <= 1, `${colorScheme}: nothing scrolls inside ${selector} (${inside})`);
    }
    await page.locator('section.speed').screenshot({ path: path.join(ARTIFACTS, `speed-360-${colorScheme}.png`) });
    await narrow.close();
  }
  assert.deepEqual(problems, []);
});

/** The page's checks as its rows hold them. */
async function benchRows(page) {
  return page.$$eval('[data-testid=bench-check] tr[data-test]', (rows) => rows.map((r) => ({
    test: r.dataset.test, quantity: r.dataset.quantity, measured: Number(r.dataset.measured),
    predicted: r.dataset.predicted === '' ? null : Number(r.dataset.predicted),
  })));
}

/** The page's checks and correction equal what `vramfit parse-bench --json` gives for `file`. */
async function sameAsCli(page, file, scenario) {
  const args = ['parse-bench', file, '--json'];
  for (const [k, v] of new URLSearchParams(scenario)) args.push(`--${k}`, v);
  const { check } = JSON.parse(execFileSync(BIN, args, { encoding: 'utf8' }));
  assert.ok(check.checks.some((c) => c.predicted !== null), 'the CLI predicts the figures');
  await paste(page, '#bench-paste', fs.readFileSync(file, 'utf8'));
  await page.waitForSelector('[data-testid=bench-check]');
  const rows = await benchRows(page);
  assert.deepEqual(rows.map((r) => [r.test, r.quantity]), check.checks.map((c) => [c.test, c.quantity]));
  rows.forEach((row, i) => {
    const c = check.checks[i];
    assert.equal(row.measured, c.measured, `${row.test} ${row.quantity}: measured`);
    if (c.predicted === null) assert.equal(row.predicted, null, `${row.test}: no prediction`);
    else near(row.predicted, c.predicted, `${row.test} ${row.quantity}: predicted`);
  });
  near(Number(await page.getAttribute('[data-testid=bench-correction]', 'data-value')), check.correction, 'the correction');
  return rows;
}

test('a pasted llama-bench run predicts what vramfit parse-bench does for the same scenario', async () => {
  const page = await openPage(context, `${base}?${BENCH}`, problems);
  await page.click('details.bench-paste summary');
  await paste(page, '#bench-paste', 'not a benchmark');
  assert.match(await (await page.waitForSelector('[data-testid=bench-error]')).textContent(), /not llama-bench or vllm bench serve output/);
  await sameAsCli(page, BENCH_FILE, BENCH);
  await page.locator('section.speed').screenshot({ path: path.join(ARTIFACTS, 'speed-bench-paste.png') });
  await page.close();
  assert.deepEqual(problems, []);
});

test('a pasted vllm bench serve block gives its output rate and TTFT measured and predicted, as parse-bench does', async () => {
  const page = await openPage(context, `${base}?${VLLM}`, problems);
  await page.click('details.bench-paste summary');
  assert.match(await page.textContent('details.bench-paste summary'), /llama-bench or vllm bench serve/);
  const rows = await sameAsCli(page, VLLM_BENCH_FILE, VLLM);
  assert.deepEqual(rows.map((r) => [r.test, r.quantity, r.measured]), [
    ['c8, 237 in / 300 out', 'tokens_per_s', 775.71],
    ['c8, 237 in / 300 out', 'ttft_s', 0.14837],
  ]);
  // The output rate is the estimate's at --concurrency 8 --prompt 237 --seq 537.
  const expected = cliEstimate(`${VLLM}&concurrency=8&prompt=237&seq=537`);
  near(rows[0].predicted, expected.speed.output_tokens_per_s, 'the output rate');
  near(rows[1].predicted, expected.speed.ttft_s, 'the TTFT');
  await page.locator('section.speed').screenshot({ path: path.join(ARTIFACTS, 'speed-vllm-paste.png') });
  await page.close();
  assert.deepEqual(problems, []);
});
