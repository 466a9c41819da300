// End-to-end tests of the built page (dist/) in headless Chromium, with the CLI as the oracle:
// what the page shows for a URL scenario must equal `vramfit estimate --json` for the same flags.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { execFileSync, spawnSync } from 'node:child_process';
import { serve, origin, launch, cliEstimate, total, cliFit, openPage, mounted, paste, colouredColumns, bars, BIN, DIST, ARTIFACTS, SUB_PATH } from './harness.mjs';

const VLLM = 'model=llama-3.1-8b&mode=inference&runtime=vllm&gpu=h100-80&max-model-len=16384&gpu-memory-utilization=0.95';
const SGLANG = 'model=qwen2.5-7b&mode=inference&runtime=sglang&gpu=l40s&max-model-len=32768';
const LLAMA_CPP = 'model=llama-3.1-8b&mode=inference&runtime=llama.cpp&gpu=rtx-4090&n-gpu-layers=10&parallel=2&ctx-size=8192';

const SCENARIOS = [
  '',
  'model=llama-3.1-8b&mode=qlora&batch=4&seq=2048&gpu=rtx-4090',
  'method=lesson&params=8B&layers=32&hidden=4096&weights=fp16',
  'model=llama-2-70b&mode=inference&weights=nf4&seq=4096&batch=8&gpu=a100-80',
  'model=qwen2.5-7b&mode=lora&lora-targets=all&lora-rank=64&checkpointing=selective&attention=eager&seq=1024',
  'model=mistral-7b&mode=full&gpus=8&sharding=zero3&offload=optimizer&gpu=h100-80',
  'model=gemma-2-9b&mode=inference&kv-dtype=fp8&seq=8192&vram=20GiB&reserved=1.5GiB',
  'model=tinyllama-1.1b&mode=full&weights=fp32&optimizer=adafactor&units=gib&custom=RSSM%20dynamics:500MiB',
  'params=135M&mode=full&optimizer=adamw-8bit&batch=16&seq=512&gpu=rtx-5080',
  'model=llama-3.2-3b&mode=qlora&double-quant=true&loss=chunked&gpu=t4&margin=500MiB',
  'model=phi-3-mini&mode=full&sharding=fsdp&gpus=4&gpu=a100-40&grad-accum=8',
  'method=lesson&params=8B&layers=32&hidden=4096&mode=qlora&weights=nf4&checkpointing=full&gpu=t4',
  VLLM,
  SGLANG,
  LLAMA_CPP,
  'model=bert-large&head=classifier&mode=full&weights=fp32&act-dtype=fp16&attention=eager&seq=512&batch=4&dropout=true&attention-dropout=true&gpu=v100-16',
];

const FIXTURES = 'crates/smi/tests/fixtures/nvidia-smi';

let server, parentServer, browser, context, base, problems;

before(async () => {
  fs.mkdirSync(ARTIFACTS, { recursive: true });
  server = await serve(DIST, [SUB_PATH, '/']);
  base = `${origin(server)}${SUB_PATH}`;
  browser = await launch();
  context = await browser.newContext({ viewport: { width: 1280, height: 1000 } });
  problems = [];
});

after(async () => {
  await browser?.close();
  server?.close();
  parentServer?.close();
});

async function componentBytes(page) {
  return page.$$eval('[data-component]', (rows) =>
    Object.fromEntries(rows.map((r) => [r.dataset.component, Number(r.dataset.bytes)])));
}

test('the page shows exactly what the CLI computes, for every scenario', async () => {
  for (const query of SCENARIOS) {
    const expected = cliEstimate(query);
    const page = await openPage(context, `${base}?${query}`, problems);
    assert.equal(await total(page), expected.total_bytes, `total for ?${query}`);
    const shown = await componentBytes(page);
    const wanted = Object.fromEntries(expected.components.map((c) => [c.id, c.bytes]));
    assert.deepEqual(shown, wanted, `components for ?${query}`);
    assert.equal(await page.getAttribute('[data-testid=verdict]', 'data-verdict'), expected.verdict);
    await page.close();
  }
  assert.deepEqual(problems, []);
});

test('the chart draws one bar, then the lesson three attempts as three bars', async () => {
  const page = await openPage(context, `${base}?model=llama-3.1-8b&mode=qlora&gpu=rtx-4090`, problems);
  const scale = await page.evaluate(() => window.devicePixelRatio);
  const single = bars(await colouredColumns(page), 20 * scale);
  assert.equal(single.length, 1, `one bar: ${JSON.stringify(single)}`);
  const [left, right] = single[0];
  const { width } = await colouredColumns(page);
  assert.ok(left > width * 0.1 && right < width * 0.98 && right - left > width * 0.2, `bar sits in the plot: ${left}-${right} of ${width}`);

  // The counter itself must be able to fail: a blank canvas has no bars.
  await page.evaluate(() => {
    const blank = document.createElement('canvas');
    blank.id = 'blank';
    blank.width = 400;
    blank.height = 200;
    blank.getContext('2d').fillRect(0, 0, 0, 0);
    document.body.append(blank);
  });
  assert.equal(bars(await colouredColumns(page, 'canvas#blank'), 1).length, 0);

  await page.click('[data-testid=lesson-attempts]');
  await page.waitForFunction(() => new URLSearchParams(location.search).get('mode') === 'qlora' && location.search.includes('method=lesson'));
  // Budget lines are 2 px tall each; the smallest attempt's bar is far taller.
  const three = bars(await colouredColumns(page), 8 * scale);
  assert.equal(three.length, 3, `three bars: ${JSON.stringify(three)}`);
  await page.locator('section.chart').screenshot({ path: path.join(ARTIFACTS, 'chart-lesson-attempts.png') });
  await page.screenshot({ path: path.join(ARTIFACTS, 'page-lesson-attempts.png'), fullPage: true });
  await page.close();
  assert.deepEqual(problems, []);
});

/** A what-if curve's points as the page drew them: each value and its x in CSS pixels. */
async function curvePoints(page, id) {
  const map = await page.getAttribute(`canvas#curve-${id}`, 'data-points');
  return map.split(',').map((pair) => pair.split(':').map(Number)).map(([x, px]) => ({ x, px }));
}

/** How many canvas pixels are within 40 of `rgb` in every channel. */
async function pixelsOf(page, selector, [r, g, b]) {
  return page.evaluate(({ selector, r, g, b }) => {
    const canvas = document.querySelector(selector);
    const data = canvas.getContext('2d').getImageData(0, 0, canvas.width, canvas.height).data;
    let n = 0;
    for (let i = 0; i < data.length; i += 4) {
      if (Math.abs(data[i] - r) < 40 && Math.abs(data[i + 1] - g) < 40 && Math.abs(data[i + 2] - b) < 40) n++;
    }
    return n;
  }, { selector, r, g, b });
}

const CURVE_BLUE = [0, 114, 178];
const TRAINING_CURVES = 'model=llama-3.1-8b&mode=qlora&seq=1024&checkpointing=full&gpu=t4';
const INFERENCE_CURVES = 'model=llama-2-70b&mode=inference&weights=nf4&seq=4096&batch=8&gpu=a100-80';

test('what-if curves are drawn and cross where vramfit fit says; a point reads out on hover and applies on click', async () => {
  for (const [query, seqWord] of [[TRAINING_CURVES, 'seq'], [INFERENCE_CURVES, 'context']]) {
    const fit = cliFit(query);
    const page = await openPage(context, `${base}?${query}`, problems);
    await page.waitForSelector('canvas#curve-seq[data-points]');
    for (const [id, max, word] of [['batch', fit.max_batch, 'batch'], ['seq', fit.max_seq, seqWord]]) {
      assert.ok(Number.isInteger(max), `vramfit fit finds a max ${id} for ?${query}`);
      assert.equal(await page.textContent(`#readout-${id}`), `max ${word} ${max.toLocaleString('en-US')}. Hover or tap a point to read it.`);
      const points = await curvePoints(page, id);
      assert.ok(points.some((p) => p.x === max), `the crossing ${max} is a point of the ${id} curve: ${JSON.stringify(points)}`);
      assert.ok(points.some((p) => p.x > max), `the ${id} curve goes past its crossing`);
      // The curve's own blue, in the line and the dots (a blank or budget-lines-only canvas has none).
      assert.ok(await pixelsOf(page, `canvas#curve-${id}`, CURVE_BLUE) > 500, `the ${id} curve is drawn`);
    }
    await page.close();
  }

  const page = await openPage(context, `${base}?${TRAINING_CURVES}`, problems);
  await page.waitForSelector('canvas#curve-batch[data-points]');
  for (const id of ['batch', 'seq']) {
    const before = new URL(page.url()).searchParams.get(id);
    const point = (await curvePoints(page, id)).find((p) => String(p.x) !== before && p.x > 1);
    await page.locator(`canvas#curve-${id}`).scrollIntoViewIfNeeded();
    const box = await page.locator(`canvas#curve-${id}`).boundingBox();
    await page.mouse.move(box.x + point.px, box.y + box.height / 2);
    await page.waitForFunction((id) => !document.querySelector(`#readout-${id}`).textContent.startsWith('max'), id);
    assert.match(await page.textContent(`#readout-${id}`), new RegExp(`^${id} ${point.x.toLocaleString('en-US')}: [0-9.]+ GB per GPU, (fits|tight|oom); click to use it$`));
    await page.mouse.click(box.x + point.px, box.y + box.height / 2);
    await page.waitForFunction(([key, x]) => new URLSearchParams(location.search).get(key) === x, [id, String(point.x)]);
    const query = new URLSearchParams(new URL(page.url()).search).toString();
    assert.equal(await total(page), cliEstimate(query).total_bytes, `the total at ${id}=${point.x}`);
    assert.equal(await page.getAttribute(`canvas#curve-${id}`, 'data-points').then((m) => m.includes(`${point.x}:`)), true);
    // One history entry: Back returns to the value before the click.
    await page.goBack();
    await page.waitForFunction(([key, x]) => new URLSearchParams(location.search).get(key) === x, [id, before]);
  }
  // A bad input keeps the last good curves.
  const drawn = await page.getAttribute('canvas#curve-batch', 'data-points');
  await page.fill('#f-batch', 'lots');
  await page.waitForSelector('#f-batch[aria-invalid=true]');
  assert.equal(await page.getAttribute('canvas#curve-batch', 'data-points'), drawn);
  await page.locator('section.curves').screenshot({ path: path.join(ARTIFACTS, 'curves-1280.png') });
  await page.close();

  // A serving runtime's question is concurrency against context: the serving panel draws it.
  const serving = await openPage(context, `${base}?${VLLM}`, problems);
  await serving.waitForSelector('canvas#serving-curve');
  assert.equal(await serving.$('[data-testid=curves]'), null);
  await serving.close();

  const narrow = await browser.newContext({ viewport: { width: 390, height: 844 }, deviceScaleFactor: 2 });
  const phone = await openPage(narrow, `${base}?${INFERENCE_CURVES}`, problems);
  await phone.waitForSelector('canvas#curve-seq[data-points]');
  const overflow = await phone.evaluate(() => document.documentElement.scrollWidth - window.innerWidth);
  assert.ok(overflow <= 1, `no horizontal scroll at 390 px (overflow ${overflow})`);
  await phone.locator('section.curves').screenshot({ path: path.join(ARTIFACTS, 'curves-390.png') });
  await narrow.close();
  assert.deepEqual(problems, []);
});

test('inputs update the URL, the URL restores the page, and Back undoes an applied fix', async () => {
  const page = await openPage(context, `${base}?model=llama-3.1-8b&mode=full&gpu=rtx-4090`, problems);
  const before = await total(page);
  await page.fill('#f-batch', '8');
  await page.waitForFunction(() => location.search.includes('batch=8'));
  const after = await total(page);
  assert.ok(after > before, 'a bigger batch costs more');
  assert.equal(after, cliEstimate('model=llama-3.1-8b&mode=full&gpu=rtx-4090&batch=8').total_bytes);

  const reloaded = await openPage(context, page.url(), problems);
  assert.equal(await total(reloaded), after, 'the URL alone restores the scenario');
  await reloaded.close();

  assert.equal(await page.getAttribute('[data-testid=verdict]', 'data-verdict'), 'oom');
  await page.screenshot({ path: path.join(ARTIFACTS, 'page-oom-ladder.png'), fullPage: true });
  const steps = page.locator('[data-testid=ladder] button');
  await steps.last().click();
  await page.waitForFunction(() => document.querySelector('[data-testid=verdict]').dataset.verdict !== 'oom');
  const fixed = await total(page);
  assert.ok(fixed < after);
  await page.goBack();
  await page.waitForFunction((t) => Number(document.querySelector('[data-testid=total]').dataset.bytes) === t, after);
  await page.close();
  assert.deepEqual(problems, []);
});

test('bad input gets an inline message and the last good result stays', async () => {
  const page = await openPage(context, `${base}?model=llama-3.1-8b&mode=lora`, problems);
  const good = await total(page);
  for (const bad of ['-1', 'abc', '1e30', 'NaN', '', '2.5']) {
    await page.fill('#f-batch', bad);
    await page.waitForSelector('#err-batch:not(:empty)');
    assert.equal(await total(page), good, `total kept after batch=${JSON.stringify(bad)}`);
  }
  await page.fill('#f-vram', '12 parsecs');
  await page.waitForSelector('#err-vram:not(:empty)');
  await page.fill('#f-vram', '16376MiB');
  await page.waitForSelector('#err-vram:empty', { state: 'attached' });
  await page.fill('#f-batch', '2');
  await page.waitForSelector('#err-batch:empty', { state: 'attached' });
  await page.screenshot({ path: path.join(ARTIFACTS, 'page-bad-input-recovered.png') });
  await page.close();

  const fromUrl = await openPage(context, `${base}?batch=abc&seq=-5&colour=blue&vram=1e400&gpu=t4`, problems);
  const ignored = await fromUrl.$$eval('[data-testid=url-warnings] li', (items) => items.map((i) => i.dataset.param));
  assert.deepEqual(ignored.sort(), ['batch', 'colour', 'seq', 'vram']);
  assert.equal(await total(fromUrl), cliEstimate('gpu=t4').total_bytes, 'defaults are used for ignored params');
  await fromUrl.screenshot({ path: path.join(ARTIFACTS, 'page-url-warnings.png') });
  await fromUrl.close();
  assert.deepEqual(problems, []);
});

test('embedded in a cross-origin iframe, it reports its height to the parent', async () => {
  const frameUrl = `${base}?embed=1&show=chart,breakdown&model=llama-3.1-8b&mode=qlora&gpu=t4`;
  const parentHtml = `<!doctype html><title>lesson</title><script>
    window.heights = [];
    addEventListener('message', (e) => { try { const m = JSON.parse(e.data); if (m.type === 'vramfit:height') { heights.push(m.height); document.querySelector('iframe').style.height = m.height + 'px'; } } catch {} });
  </script><iframe src="${frameUrl}" width="900" height="300"></iframe>`;
  parentServer = await serve(DIST, ['/nothing/'], { '/lesson.html': parentHtml });
  const parentUrl = `${origin(parentServer, 'localhost')}/lesson.html`;
  assert.notEqual(new URL(parentUrl).origin, new URL(frameUrl).origin);
  const page = await context.newPage();
  page.on('pageerror', (e) => problems.push(`parent page error: ${e.message}`));
  await page.goto(parentUrl);
  const frame = await (await page.waitForSelector('iframe')).contentFrame();
  await frame.waitForSelector('section.breakdown [data-component]', { timeout: 30_000 });
  assert.equal(await frame.$('.site-header'), null, 'no header in embed mode');
  assert.equal(await frame.$('[data-testid=table-inference]'), null, 'show= picks the sections');
  assert.equal(await frame.$('[data-testid=total]'), null, 'show= lists no summary, so there is none');
  assert.ok(await frame.$('canvas#memory-chart'));
  await page.waitForFunction(() => window.heights.length > 0 && window.heights.at(-1) > 200);
  await page.screenshot({ path: path.join(ARTIFACTS, 'embed-in-lesson.png'), fullPage: true });
  await page.close();
  assert.deepEqual(problems, []);
});

test('a pasted config.json sets the shape, and a broken one names what is missing', async () => {
  const page = await openPage(context, `${base}?mode=inference&weights=bf16`, problems);
  await page.click('details.config-paste > summary');
  const config = { model_type: 'qwen2', hidden_size: 3584, intermediate_size: 18944, num_attention_heads: 28,
    num_hidden_layers: 28, num_key_value_heads: 4, vocab_size: 152064, tie_word_embeddings: false };
  await page.fill('[data-testid=config-paste]', JSON.stringify(config));
  await page.waitForFunction(() => location.search.includes('layers=28'));
  const params = new URLSearchParams(new URL(page.url()).search);
  assert.equal(await total(page), cliEstimate(params.toString()).total_bytes);
  assert.equal(await total(page), cliEstimate('model=qwen2.5-7b&mode=inference&weights=bf16').total_bytes, 'same as the preset');
  await page.fill('[data-testid=config-paste]', '{"hidden_size": 4096}');
  const error = await page.textContent('[data-testid=config-error]');
  assert.match(error, /num_hidden_layers/);
  await page.close();
  assert.deepEqual(problems, []);
});

test('pasted MoE, sliding-window and MLA configs give the CLI\'s numbers, with active parameters and warnings', async () => {
  const configs = 'crates/engine/tests/fixtures/hf-configs';
  // A quantization method the engine does not model must be named, not silently read as bf16.
  const unmodeled = path.join(fs.mkdtempSync(path.join(os.tmpdir(), 'vramfit-config-')), 'hqq.json');
  const llama = JSON.parse(fs.readFileSync(path.join(configs, 'llama-3.2-3b.json'), 'utf8'));
  fs.writeFileSync(unmodeled, JSON.stringify({ ...llama, quantization_config: { quant_method: 'hqq', nbits: 4 } }));
  for (const [file, active, warning] of [
    ['gpt-oss-20b.json', true, null],
    ['gemma-3-27b-it.json', false, null],
    ['deepseek-r1-0528.json', true, null],
    [unmodeled, false, /quant_method `hqq` is not modeled/],
  ]) {
    const page = await openPage(context, `${base}?mode=inference&seq=8192&batch=2&gpu=h200`, problems);
    await page.click('details.config-paste > summary');
    await page.fill('[data-testid=config-paste]', fs.readFileSync(path.resolve(configs, file), 'utf8'));
    await page.waitForSelector('[data-testid=config-read]');
    await page.waitForFunction(() => location.search.includes('layers='));
    const fromCli = JSON.parse(execFileSync(BIN, ['estimate', '--json', '--config', path.resolve(configs, file),
      '--mode', 'inference', '--seq', '8192', '--batch', '2', '--gpu', 'h200'], { encoding: 'utf8' }));
    assert.equal(await total(page), fromCli.total_bytes, `${file}: the page equals vramfit estimate --config`);
    const line = await page.$eval('[data-testid=model-line]', (e) => ({ params: e.dataset.params, active: e.dataset.active, text: e.textContent }));
    assert.equal(Number(line.params), Math.round(fromCli.params), file);
    assert.equal(line.active !== '', active, `${file}: active parameters shown for a mixture of experts only`);
    if (active) assert.equal(Number(line.active), Math.round(fromCli.active_params), file);
    const warnings = await page.$$eval('[data-testid=config-warning]', (l) => l.map((w) => w.textContent));
    if (warning) assert.ok(warnings.some((w) => warning.test(w)), `${file}: ${warnings}`);
    else assert.deepEqual(warnings, [], file);
    await page.screenshot({ path: path.join(ARTIFACTS, `page-config-${path.basename(file, '.json')}.png`), fullPage: true });
    await page.close();
  }
  assert.deepEqual(problems, []);
});

const GGUF = 'crates/gguf/tests/fixtures/llama-3.1-8b-instruct-q4_k_m.header.gguf';

/** Drops a file made in the page from `bytes` (an array of byte values) on `selector`, as a user's drag does. */
async function dropFile(page, selector, name, bytes, { paddingBytes = 0, headerPaddingBytes = 0 } = {}) {
  await page.evaluate(({ selector, name, bytes, paddingBytes, headerPaddingBytes }) => {
    let header = new Uint8Array(bytes);
    if (headerPaddingBytes > 0) {
      // One more metadata entry, a string of headerPaddingBytes, right after the counts: a header
      // longer than the page's first read.
      const key = new TextEncoder().encode('vramfit.test.padding');
      const entry = new Uint8Array(8 + key.length + 4 + 8 + headerPaddingBytes).fill(0x20);
      const view = new DataView(entry.buffer);
      view.setBigUint64(0, BigInt(key.length), true);
      entry.set(key, 8);
      view.setUint32(8 + key.length, 8, true);
      view.setBigUint64(12 + key.length, BigInt(headerPaddingBytes), true);
      const padded = new Uint8Array(header.length + entry.length);
      padded.set(header.subarray(0, 24));
      padded.set(entry, 24);
      padded.set(header.subarray(24), 24 + entry.length);
      const counts = new DataView(padded.buffer);
      counts.setBigUint64(16, counts.getBigUint64(16, true) + 1n, true);
      header = padded;
    }
    // Tensor data after the header: what a real file holds and the page must not read.
    const file = new File([header, new Uint8Array(paddingBytes)], name);
    window.vramfitSlices = [];
    const slice = (window.vramfitOriginalSlice ??= Blob.prototype.slice);
    Blob.prototype.slice = function (...args) { window.vramfitSlices.push(args); return slice.apply(this, args); };
    const files = new DataTransfer();
    files.items.add(file);
    document.querySelector(selector).dispatchEvent(new DragEvent('drop', { dataTransfer: files, bubbles: true, cancelable: true }));
  }, { selector, name, bytes, paddingBytes, headerPaddingBytes });
}

test('a dropped .gguf file sets llama.cpp with the file\'s exact weights, reading only its header; a file that is not GGUF is named and the estimate stays', async () => {
  const bytes = [...fs.readFileSync(GGUF)];
  const read = spawnSync(BIN, ['estimate', '--json', '--gguf', GGUF, '--gpu', 'rtx-4090'], { encoding: 'utf8' });
  assert.equal(read.status, 0, read.stderr);
  const fromCli = JSON.parse(read.stdout);
  const cliWeights = fromCli.components.find((c) => c.id === 'weights').bytes;
  const page = await openPage(context, `${base}?model=llama-3.1-8b&mode=qlora&batch=4&gpu=rtx-4090`, problems);
  await page.click('details.gguf-drop > summary');
  // 256 MiB of tensor data after the header: only a slice of the first 8 MiB is read.
  await dropFile(page, '[data-testid=gguf-drop]', 'llama-3.1-8b-instruct-q4_k_m.gguf', bytes, { paddingBytes: 256 << 20 });
  await page.waitForSelector('[data-testid=gguf-read]');
  await page.waitForFunction(() => location.search.includes('runtime=llama.cpp'));
  assert.equal(await page.inputValue('#f-runtime'), 'llama.cpp');
  assert.equal(await page.inputValue('#f-mode'), 'inference');
  assert.deepEqual(await page.evaluate(() => window.vramfitSlices), [[0, 8 << 20]], 'one slice, the first 8 MiB');
  const summary = await page.textContent('[data-testid=gguf-summary]');
  assert.match(summary, /: 4,912,898,304 B of tensors /);
  assert.ok(read.stderr.includes(summary), `the page's summary is the CLI's: ${summary} / ${read.stderr}`);
  assert.equal((await componentBytes(page)).weights, cliWeights, 'GPU weights: the page equals vramfit estimate --gguf');
  assert.equal(await total(page), fromCli.total_bytes, 'total: the page equals vramfit estimate --gguf');
  const params = new URLSearchParams(new URL(page.url()).search);
  assert.equal(await total(page), cliEstimate(params.toString()).total_bytes, 'the URL stands on its own');
  assert.deepEqual(await page.$$eval('[data-testid=gguf-warning]', (l) => l.map((w) => w.textContent)), []);

  // A file that is not GGUF, through the file picker: an alert, and the estimate stays.
  const before = { total: await total(page), url: page.url() };
  await page.setInputFiles('[data-testid=gguf-file]', { name: 'config.json', mimeType: 'application/json', buffer: Buffer.from('{"hidden_size": 4096}') });
  const error = await page.waitForSelector('[data-testid=gguf-error][role=alert]');
  assert.match(await error.textContent(), /^config\.json: /);
  assert.equal(await present(page, '[data-testid=gguf-read]'), false);
  assert.equal(await total(page), before.total, 'the last good estimate stays');
  assert.equal(page.url(), before.url);

  // A header longer than the first read: read again with what it needs, and the same model.
  await dropFile(page, '[data-testid=gguf-drop]', 'padded.gguf', bytes, { headerPaddingBytes: 9 << 20, paddingBytes: 64 << 20 });
  await page.waitForSelector('[data-testid=gguf-read]');
  const slices = await page.evaluate(() => window.vramfitSlices);
  assert.equal(slices.length, 2, JSON.stringify(slices));
  assert.deepEqual(slices[0], [0, 8 << 20]);
  assert.ok(slices[1][1] >= bytes.length + (9 << 20) && slices[1][1] <= 16 << 20, `the second read holds the header: ${slices[1]}`);
  assert.equal((await componentBytes(page)).weights, cliWeights);
  await page.close();

  // The empty and cut-short cases name the file and say why.
  const cut = await openPage(context, `${base}?mode=inference`, problems);
  const cutTotal = await total(cut);
  await dropFile(cut, '[data-testid=gguf-drop]', 'cut.gguf', bytes.slice(0, 4000));
  assert.match(await (await cut.waitForSelector('[data-testid=gguf-error]')).textContent(), /^cut\.gguf ends inside its GGUF header/);
  assert.equal(await total(cut), cutTotal);
  await cut.close();

  const narrow = await browser.newContext({ viewport: { width: 360, height: 780 }, deviceScaleFactor: 2 });
  const small = await openPage(narrow, `${base}?mode=inference&gpu=rtx-4060-ti-16`, problems);
  await small.click('details.gguf-drop > summary');
  await dropFile(small, '[data-testid=gguf-drop]', 'llama-3.1-8b-instruct-q4_k_m.gguf', bytes);
  await small.waitForSelector('[data-testid=gguf-read]');
  const overflow = await small.evaluate(() => document.documentElement.scrollWidth - window.innerWidth);
  assert.ok(overflow <= 1, `no horizontal scroll at 360 px (overflow ${overflow})`);
  await small.locator('details.gguf-drop').screenshot({ path: path.join(ARTIFACTS, 'gguf-read-360.png') });
  await small.setInputFiles('[data-testid=gguf-file]', { name: 'notes.txt', mimeType: 'text/plain', buffer: Buffer.from('not a model') });
  await small.waitForSelector('[data-testid=gguf-error]');
  await small.locator('details.gguf-drop').screenshot({ path: path.join(ARTIFACTS, 'gguf-error-360.png') });
  await small.screenshot({ path: path.join(ARTIFACTS, 'page-gguf-360.png'), fullPage: true });
  await narrow.close();
  assert.deepEqual(problems, []);
});

test('chapter 62 examples load by name and by button, and desktop usage fills the in-use field', async () => {
  const page = await openPage(context, `${base}?lesson=qlora-8b-t4`, problems);
  assert.equal(await total(page), 5_013_382_810, 'the lesson formula, 5.01 GB');
  await page.waitForFunction(() => !location.search.includes('lesson=') && location.search.includes('method=lesson'));
  const reloaded = await openPage(context, page.url(), problems);
  assert.equal(await total(reloaded), 5_013_382_810, 'the rewritten URL stands on its own');
  await reloaded.close();
  await page.click('details.lesson-examples > summary');
  await page.click('[data-lesson=full-ft-8b]');
  await page.waitForFunction(() => document.querySelector('[data-testid=total]').dataset.bytes === '97573741824');
  await page.click('[data-lesson=t4-batch4-seq1024]');
  await page.waitForFunction(() => document.querySelector('[data-testid=verdict]').dataset.verdict === 'fits' && location.search.includes('batch=4'));
  await page.click('details.desktop-usage > summary');
  await page.check('#desktop-0');
  await page.check('#desktop-2');
  await page.waitForFunction(() => new URLSearchParams(location.search).get('reserved') === '1100MB');
  await page.close();
  const unknown = await openPage(context, `${base}?lesson=nope`, problems);
  assert.deepEqual(await unknown.$$eval('[data-testid=url-warnings] li', (l) => l.map((i) => i.dataset.param)), ['lesson']);
  await unknown.close();
  assert.deepEqual(problems, []);
});

test('served from the site root as well as a sub-path', async () => {
  const page = await openPage(context, `${origin(server)}/?model=llama-3.1-8b`, problems);
  assert.equal(await total(page), cliEstimate('model=llama-3.1-8b').total_bytes);
  await page.close();
  assert.deepEqual(problems, []);
});

test('the four quick-reference tables render, with the current cell highlighted', async () => {
  const page = await openPage(context, `${base}?mode=qlora&params=8B&weights=nf4&checkpointing=full&batch=4&seq=512`, problems);
  for (const id of ['inference', 'qlora', 'gpus', 'budget']) {
    const rows = await page.$$(`[data-testid=table-${id}] tbody tr`);
    assert.ok(rows.length >= 3, `table-${id} has rows`);
  }
  const current = await page.$$eval('[data-testid=table-qlora] td.current', (cells) => cells.map((c) => c.textContent));
  assert.equal(current.length, 1, 'exactly the scenario\'s cell is highlighted');
  await page.locator('section.tables').screenshot({ path: path.join(ARTIFACTS, 'tables.png') });
  await page.close();
});

test('pasting nvidia-smi output from five real formats calibrates the budget', async () => {
  const cases = [
    ['table__geforce-rtx-4090__580.65.06__linux.txt', 1],
    ['csv-query-gpu-full__l40s__595.80__linux.csv', 1],
    ['xml__a10g__515.105.01.xml', 1],
    ['q__l40s__595.80__linux.txt', 1],
    ['table__h100-80gb-hbm3-x8__550.90.07__linux.txt', 8],
  ];
  for (const [file, gpus] of cases) {
    const page = await openPage(context, `${base}?model=llama-3.1-8b&mode=qlora`, problems);
    const text = fs.readFileSync(path.join(FIXTURES, file), 'utf8');
    await page.fill('[data-testid=smi-paste]', text);
    await page.waitForSelector('[data-testid=gpu-card]');
    const cards = await page.$$('[data-testid=gpu-card]');
    assert.equal(cards.length, gpus, `${file}: GPU cards`);
    const totalBytes = Number(await cards[0].getAttribute('data-total'));
    assert.ok(totalBytes > 1e9, `${file}: total read`);
    await page.click('[data-testid=use-gpu] >> nth=0');
    await page.waitForFunction(() => location.search.includes('vram='));
    const params = new URLSearchParams(new URL(page.url()).search);
    const expected = cliEstimate(params.toString());
    assert.equal(expected.capacity_bytes, totalBytes, `${file}: the card's total is the capacity`);
    assert.equal(await total(page), expected.total_bytes);
    if (gpus > 1) await page.screenshot({ path: path.join(ARTIFACTS, 'calibrated-8xh100.png'), fullPage: true });
    await page.close();
  }
  // `vramfit probe --json` (here replaying a recorded snapshot: no GPU on CI) imports the same way.
  const probeJson = execFileSync(BIN, ['probe', '--replay', 'crates/cli/tests/fixtures/gpu/replay-h100-probe.json', '--json'], { encoding: 'utf8' });
  const probed = await openPage(context, `${base}?model=llama-3.1-8b&mode=qlora`, problems);
  await probed.fill('[data-testid=smi-paste]', probeJson);
  const probedTotal = JSON.parse(probeJson).gpus[0].memory.total_bytes;
  await probed.waitForFunction((t) => document.querySelector('[data-testid=gpu-card]')?.dataset.total === String(t), probedTotal);
  await probed.click('[data-testid=use-gpu] >> nth=0');
  await probed.waitForFunction(() => location.search.includes('vram='));
  assert.equal(cliEstimate(new URL(probed.url()).search.slice(1)).capacity_bytes, probedTotal);
  await probed.close();

  const dropped = await openPage(context, base, problems);
  const xml = fs.readFileSync(path.join(FIXTURES, 'xml__a100-sxm4-80gb-x4__535.54.03.xml'), 'utf8');
  await dropped.evaluate((text) => {
    const files = new DataTransfer();
    files.items.add(new File([text], 'nvidia-smi.xml', { type: 'text/xml' }));
    document.querySelector('[data-testid=smi-paste]').dispatchEvent(new DragEvent('drop', { dataTransfer: files, bubbles: true, cancelable: true }));
  }, xml);
  await dropped.waitForFunction(() => document.querySelector('[data-testid=gpu-card]')?.dataset.total === String(81920 * 1048576));
  await dropped.close();

  const page = await openPage(context, base, problems);
  await page.fill('[data-testid=smi-paste]', 'this is not nvidia-smi output');
  await page.waitForSelector('[data-testid=smi-error]');
  await page.close();
  assert.deepEqual(problems, []);
});

test('planning on a pasted card: free counts the driver reserve, all GPUs plan on the fullest, unknowns stay unknown', async () => {
  const scenarioOf = (page) => cliEstimate(new URL(page.url()).search.slice(1)).scenario;
  const parsed = (file) => JSON.parse(execFileSync(BIN, ['parse-smi', path.join(FIXTURES, file), '--json'], { encoding: 'utf8' }));

  // `-q` gives free memory: "in use by others" becomes total − free (used plus the driver's reserve),
  // exactly what `vramfit estimate --from-probe` sets for the same file.
  const qFile = 'q__l40s__595.80__linux.txt';
  const one = await openPage(context, `${base}?model=llama-3.1-8b&mode=qlora&gpus=4&sharding=fsdp`, problems);
  await one.fill('[data-testid=smi-paste]', fs.readFileSync(path.join(FIXTURES, qFile), 'utf8'));
  await one.click('[data-testid=use-gpu] >> nth=0');
  await one.waitForFunction(() => location.search.includes('vram='));
  const { total_bytes: cardTotal, free_bytes: cardFree } = parsed(qFile).gpus[0].memory;
  const fromPage = scenarioOf(one);
  assert.equal(fromPage.reserved, cardTotal - cardFree, 'reserved = total − free');
  assert.equal(fromPage.gpus, 1, 'one card after four');
  const fromCli = JSON.parse(execFileSync(BIN, ['estimate', '--json', '--from-probe', path.join(FIXTURES, qFile), '--model', 'llama-3.1-8b', '--mode', 'qlora'], { encoding: 'utf8' }));
  assert.equal(fromCli.scenario.reserved, fromPage.reserved, 'page and CLI plan a card alike');
  await one.close();

  // Eight RTX 4090s with uneven load: a sharded run is planned on the smallest total and the fullest card.
  const eight = 'q__rtx-4090-x8__535.154.05__linux.txt';
  const cards = parsed(eight).gpus.map((g) => g.memory);
  const all = await openPage(context, `${base}?model=llama-3.1-8b&mode=lora`, problems);
  await paste(all, '[data-testid=smi-paste]', fs.readFileSync(path.join(FIXTURES, eight), 'utf8'));
  await all.waitForSelector('[data-testid=gpu-process]');
  await all.click('[data-testid=use-all-gpus]');
  await all.waitForFunction(() => location.search.includes('gpus=8'));
  const sharded = scenarioOf(all);
  assert.equal(sharded.vram, Math.min(...cards.map((m) => m.total_bytes)));
  assert.equal(sharded.reserved, Math.max(...cards.map((m) => m.total_bytes - m.free_bytes)));
  assert.equal(sharded.sharding, 'fsdp', 'a training run over eight GPUs is sharded');
  assert.match(await all.textContent('[data-testid=card-plan-notes]'), /sharding=fsdp/);
  await all.locator('section.gpu-now').screenshot({ path: path.join(ARTIFACTS, 'gpu-now-8x4090.png') });
  await all.close();

  // A MIG slice is planned on its own memory, not the whole card's.
  const mig = await openPage(context, `${base}?model=llama-3.2-3b&mode=qlora`, problems);
  await mig.fill('[data-testid=smi-paste]', fs.readFileSync(path.join(FIXTURES, 'table__h100-mig__590.48.01__linux.txt'), 'utf8'));
  await mig.waitForSelector('[data-testid=mig-device]');
  assert.equal((await mig.$$('[data-testid=mig-device]')).length, 4);
  await mig.click('[data-testid=use-mig] >> nth=1');
  await mig.waitForFunction(() => location.search.includes('vram='));
  assert.deepEqual([scenarioOf(mig).vram, scenarioOf(mig).reserved], [20096 * 2 ** 20, 17 * 2 ** 20]);
  await mig.close();

  // `nvidia-smi -L` names GPUs but gives no memory: nothing is planned and nothing becomes 0.
  const list = await openPage(context, `${base}?model=llama-3.1-8b&reserved=1GiB`, problems);
  await list.fill('[data-testid=smi-paste]', fs.readFileSync(path.join(FIXTURES, 'list-L__h100-mig__590.48.01__linux.txt'), 'utf8'));
  await list.waitForSelector('[data-testid=gpu-card]');
  assert.equal(await list.getAttribute('[data-testid=gpu-card] >> nth=0', 'data-total'), null, 'no total shown as none');
  assert.ok(await list.isDisabled('[data-testid=use-gpu] >> nth=0'), 'nothing to plan on');
  assert.equal(scenarioOf(list).reserved, 2 ** 30);
  await list.close();
  assert.deepEqual(problems, []);
});

test('measured vs predicted shows the error, and applying the correction makes the estimate match', async () => {
  const query = 'model=llama-3.1-8b&mode=qlora&checkpointing=full&gpu=rtx-4090';
  const page = await openPage(context, `${base}?${query}`, problems);
  const predicted = await total(page);
  const observed = predicted + 2_000_000_000;
  await page.fill('[data-testid=measured-paste]', `${observed / 1e9}GB`);
  const error = Number(await (await page.waitForSelector('[data-testid=measured-error]')).getAttribute('data-error-pct'));
  assert.ok(Math.abs(error - ((predicted - observed) / observed) * 100) < 0.01, `error ${error}`);
  assert.ok(!(await page.isVisible('[data-testid=measured-far-off]')), 'a plausible measurement is not flagged');
  await page.click('[data-testid=apply-correction]');
  await page.waitForFunction(() => location.search.includes('context='));
  assert.equal(await total(page), observed, 'the corrected estimate equals the observed peak');
  const params = new URLSearchParams(new URL(page.url()).search);
  assert.equal(cliEstimate(params.toString()).total_bytes, observed, 'the correction travels in the URL to the CLI');
  // A `watch nvidia-smi` paste (a real table, then the same table edited to a busier moment) is
  // read at its highest reading, not its last.
  const table = fs.readFileSync(path.join(FIXTURES, 'table__geforce-rtx-4090__580.65.06__linux.txt'), 'utf8');
  await page.fill('[data-testid=measured-paste]', `${table.replace('   232MiB /', ' 20000MiB /')}\n${table}`);
  await page.waitForFunction((b) => document.querySelector('[data-testid=measured-error]')?.dataset.observed === String(b), 20000 * 2 ** 20);
  assert.match(await page.textContent('[data-testid=measured-error]'), /highest of several readings/);
  // What `vramfit run` writes (sampling a replayed two-GPU recording: no GPU on CI) is read from
  // its fullest GPU, as the estimate is per GPU.
  const out = path.join(fs.mkdtempSync(path.join(os.tmpdir(), 'vramfit-run-')), 'measurement.json');
  execFileSync(BIN, ['run', '--replay', 'crates/cli/tests/fixtures/gpu/replay-watch-climb-gpu1-lost.json', '--interval', '50ms', '--out', out, '--', 'sleep', '0.5'], { stdio: 'ignore' });
  const measurement = fs.readFileSync(out, 'utf8');
  const fullest = Math.max(...JSON.parse(measurement).gpus.map((g) => g.peak_used_bytes));
  await page.fill('[data-testid=measured-paste]', measurement);
  await page.waitForFunction((b) => document.querySelector('[data-testid=measured-error]')?.dataset.observed === String(b), fullest);
  assert.match(await page.textContent('[data-testid=measured-error]'), /vramfit run, GPU \d, the fullest of 2/);
  assert.ok(await page.isVisible('[data-testid=measured-far-off]'), 'a measurement of a far bigger run is flagged');
  await page.close();

  // The correction is remembered by this browser for the full page, never for embeds or over the URL.
  const again = await openPage(context, `${base}?${query}`, problems);
  assert.equal(await total(again), observed, 'a saved correction applies on the next visit');
  const embedded = await openPage(context, `${base}?embed=1&${query}`, problems);
  assert.equal(await total(embedded), predicted, 'embeds ignore the saved correction');
  await embedded.close();
  await again.click('[data-testid=reset-correction]');
  await again.waitForFunction((p) => Number(document.querySelector('[data-testid=total]').dataset.bytes) === p, predicted);
  await again.close();
  const afterReset = await openPage(context, `${base}?${query}`, problems);
  assert.equal(await total(afterReset), predicted, 'reset forgets it');
  // A correction the scenario cannot take (a pasted GPU claiming an exabyte in use) is refused at
  // its field, and the estimate stays as it was.
  await afterReset.fill('[data-testid=measured-paste]', 'index, memory.used [MiB]\n0, 999999999999 MiB\n');
  await afterReset.click('[data-testid=apply-correction]');
  await afterReset.waitForFunction(() => document.querySelector('.field.invalid .field-error')?.textContent.includes('1 EB'));
  assert.equal(await total(afterReset), predicted, 'the last good estimate stays');
  await afterReset.close();
  assert.deepEqual(problems, []);
});

test('exports the scenario as JSON and the chart as PNG, and the JSON imports back', async () => {
  const query = 'model=qwen2.5-7b&mode=lora&lora-rank=64&batch=2&seq=4096&gpu=a100-40';
  const page = await openPage(context, `${base}?${query}`, problems);
  const [json] = await Promise.all([page.waitForEvent('download'), page.click('button:text-is("Export JSON")')]);
  assert.equal(json.suggestedFilename(), 'vramfit-scenario.json');
  const exported = JSON.parse(fs.readFileSync(await json.path(), 'utf8'));
  assert.deepEqual([exported.model, exported.mode, exported['lora-rank'], exported.batch, exported.seq, exported.gpu],
    ['qwen2.5-7b', 'lora', 64, 2, 4096, 'a100-40']);

  const [png] = await Promise.all([page.waitForEvent('download'), page.click('button:text-is("Export PNG")')]);
  assert.equal(png.suggestedFilename(), 'vramfit-memory-stack.png');
  const bytes = fs.readFileSync(await png.path());
  assert.deepEqual([...bytes.subarray(0, 8)], [0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a], 'a PNG file');
  const canvas = await page.evaluate(() => { const c = document.querySelector('canvas#memory-chart'); return [c.width, c.height]; });
  assert.deepEqual([bytes.readUInt32BE(16), bytes.readUInt32BE(20)], canvas, 'the PNG is the chart at its pixel size');

  const fresh = await openPage(context, base, problems);
  await fresh.click('summary:text-is("Import scenario JSON")');
  await fresh.fill('#import-json', JSON.stringify(exported));
  await fresh.click('button:text-is("Import")');
  await fresh.waitForFunction(() => location.search.includes('lora-rank=64'));
  assert.equal(await total(fresh), await total(page), 'the imported scenario gives the same total');
  await fresh.fill('#import-json', '{"batch": -3}');
  await fresh.click('button:text-is("Import")');
  await fresh.waitForFunction(() => document.querySelector('.share .field-error')?.textContent.length > 0);
  assert.equal(await total(fresh), await total(page), 'a bad import keeps the last good scenario');
  await page.close();
  await fresh.close();
  assert.deepEqual(problems, []);
});

test('"How accurate is this?" shows the figures `vramfit estimate --accuracy` gives for the kind of run, and says when few runs are like it', async () => {
  // fp8 inference on one GPU has 3 rows (too few); on two, none.
  const cases = ['model=llama-3.1-8b&mode=qlora', 'model=llama-3.1-8b&mode=full&gpus=2&sharding=fsdp', VLLM, LLAMA_CPP, 'model=llama-3.1-8b&mode=inference&weights=fp8', 'model=llama-3.1-8b&mode=inference&weights=fp8&gpus=2'];
  for (const query of cases) {
    const args = ['estimate', '--json', '--accuracy'];
    for (const [k, v] of new URLSearchParams(query)) args.push(`--${k}`, v);
    const { accuracy } = JSON.parse(execFileSync(BIN, args, { encoding: 'utf8' }));
    const page = await openPage(context, `${base}?${query}`, problems);
    const panel = await page.waitForSelector('section.accuracy [data-testid=accuracy-kind]');
    assert.equal(await panel.getAttribute('data-kind'), accuracy.kind, `kind for ?${query}`);
    assert.ok((await panel.textContent()).includes(`(${accuracy.label})`), `label for ?${query}`);
    const shown = await page.$$eval('section.accuracy tbody tr:not([data-testid=accuracy-speed])', (rows) => rows.map((r) => [...r.children].map((c) => c.textContent)));
    const wanted = accuracy.figures.map((f) => [f.figure === 'peak' ? 'peak memory' : f.figure, String(f.rows), `${f.median_abs_pct.toFixed(1)}%`, `${f.worst_abs_pct.toFixed(1)}%${f.worst_id}`, `${f.within_10_pct} of ${f.rows}`]);
    assert.deepEqual(shown, wanted, `figures for ?${query}`);
    const few = await page.$('section.accuracy [data-testid=accuracy-few]');
    assert.equal(few && await few.textContent(), accuracy.note, `the note for ?${query}`);
    if (accuracy.figures.some((f) => f.figure === 'peak')) {
      const sources = await page.$$eval('section.accuracy li', (items) => items.map((i) => i.textContent));
      assert.deepEqual(sources, accuracy.figures.flatMap((f) => f.sources), `sources for ?${query}`);
    }
    await page.close();
  }
  assert.deepEqual(problems, []);
});

test('"How accurate is this?" shows the held-out speed rows `vramfit estimate --accuracy` gives for each speed figure\'s kind, and says when a kind is widened or unmeasured', async () => {
  const cases = [LLAMA_CPP, VLLM, 'model=llama-3.1-8b&mode=inference&runtime=llama.cpp&gpu=rtx-4090', 'model=llama-3.1-8b&mode=lora&gpu=rtx-4090', 'model=llama-3.1-8b&mode=inference&gpu=rtx-4090'];
  for (const query of cases) {
    const args = ['estimate', '--json', '--accuracy'];
    for (const [k, v] of new URLSearchParams(query)) args.push(`--${k}`, v);
    const { accuracy: { speed } } = JSON.parse(execFileSync(BIN, args, { encoding: 'utf8' }));
    const page = await openPage(context, `${base}?${query}`, problems);
    await page.waitForSelector('section.accuracy [data-testid=accuracy-kind]');
    const rows = await page.$$eval('section.accuracy tr[data-testid=accuracy-speed]', (rows) => rows.map((r) => [r.dataset.figure, r.dataset.kind, ...[...r.children].map((c) => c.textContent)]));
    const wanted = speed.figures.map((f) => [f.figure, f.kind, f.label, f.shown, String(f.group.rows), `${f.group.median_abs_pct.toFixed(1)}%`, `${f.group.worst_abs_pct.toFixed(1)}%${f.group.worst_id}`, f.group.banded ? `${f.group.in_band} of ${f.group.banded}` : 'no band']);
    assert.deepEqual(rows, wanted, `speed rows for ?${query}`);
    const notes = await page.$$eval('section.accuracy [data-testid=accuracy-speed-note]', (ps) => ps.map((p) => p.textContent));
    assert.deepEqual(notes, [...speed.figures.map((f) => f.note).filter((n) => n), ...(speed.note ? [speed.note] : [])], `speed notes for ?${query}`);
    assert.ok(rows.length > 0 || notes.length > 0, `never silent for ?${query}`);
    await page.close();
  }
  assert.deepEqual(problems, []);
});

test('axe finds no serious or critical accessibility violations', async () => {
  const axeContext = await browser.newContext({ bypassCSP: true });
  const page = await axeContext.newPage();
  for (const query of ['model=llama-3.1-8b&mode=qlora', VLLM, 'model=llama-3.1-8b&mode=inference&runtime=vllm&gpu=rtx-4090&max-model-len=1000000']) {
    await page.goto(`${base}?${query}`);
    await page.waitForSelector('[data-testid=total]');
    await mounted(page);
    await page.addScriptTag({ path: 'node_modules/axe-core/axe.min.js' });
    const violations = await page.evaluate(async () => {
      const result = await window.axe.run(document, { resultTypes: ['violations'] });
      return result.violations.filter((v) => ['serious', 'critical'].includes(v.impact)).map((v) => `${v.id}: ${v.nodes.length} nodes, e.g. ${v.nodes[0]?.html}`);
    });
    assert.deepEqual(violations, [], `?${query}`);
  }
  await axeContext.close();
});

test('usable at 360 px wide and in dark mode', async () => {
  const narrow = await browser.newContext({ viewport: { width: 360, height: 780 }, colorScheme: 'dark', deviceScaleFactor: 2 });
  const page = await openPage(narrow, `${base}?model=llama-3.1-8b&mode=qlora&gpu=t4`, problems);
  const overflow = () => page.evaluate(() => document.documentElement.scrollWidth - window.innerWidth);
  assert.ok(await overflow() <= 1, `no horizontal scroll at 360 px (overflow ${await overflow()})`);
  // Detected GPUs with long process paths still fit the width.
  await paste(page, '[data-testid=smi-paste]', fs.readFileSync(path.join(FIXTURES, 'q__rtx-4090-x8__535.154.05__linux.txt'), 'utf8'));
  await page.waitForSelector('[data-testid=gpu-process]');
  assert.ok(await overflow() <= 1, `GPU cards fit at 360 px (overflow ${await overflow()})`);
  await page.locator('section.gpu-now').screenshot({ path: path.join(ARTIFACTS, 'gpu-now-360-dark.png') });
  await page.screenshot({ path: path.join(ARTIFACTS, 'mobile-dark.png'), fullPage: true });
  await narrow.close();
  assert.deepEqual(problems, []);
});

/** The sizes each panel shows, as text: summary, breakdown, solver, ladder, GPU cards, measured, tables. */
async function panelSizes(page) {
  return page.evaluate(() => {
    const text = (selector) => [...document.querySelectorAll(selector)].map((e) => e.textContent).join(' | ');
    return {
      summary: text('.summary'),
      breakdown: text('.breakdown td.num'),
      solver: text('[data-testid=solution]'),
      ladder: text('[data-testid=ladder] li'),
      cards: text('[data-testid=gpu-card] p, [data-testid=gpu-process]'),
      measured: text('[data-testid=measured-error]'),
      tables: text('.tables td'),
    };
  });
}

/** Every panel shows sizes, and only in `unit`'s family: GB/MB or GiB/MiB after a number. */
function assertUnits(panels, unit) {
  const decimal = /\d (GB|MB)\b/;
  const binary = /\d (GiB|MiB)\b/;
  const [wanted, unwanted] = unit === 'gib' ? [binary, decimal] : [decimal, binary];
  for (const [panel, text] of Object.entries(panels)) {
    assert.match(text, wanted, `${panel} shows no ${unit} size: ${text.slice(0, 300)}`);
    assert.doesNotMatch(text, unwanted, `${panel} still shows the other unit: ${text.slice(0, 300)}`);
  }
}

test('switching GB and GiB changes every panel, and back again', async () => {
  const page = await openPage(context, `${base}?model=llama-3.1-8b&mode=full&batch=4&gpu=rtx-4090`, problems);
  await page.fill('[data-testid=smi-paste]', fs.readFileSync(path.join(FIXTURES, 'table__geforce-rtx-4090__580.65.06__linux.txt'), 'utf8'));
  await page.waitForSelector('[data-testid=gpu-card]');
  await page.fill('[data-testid=measured-paste]', '70GB');
  await page.waitForSelector('[data-testid=measured-error]');
  assertUnits(await panelSizes(page), 'gb');
  for (const unit of ['gib', 'gb']) {
    await page.selectOption('#f-units', unit);
    await page.waitForFunction((u) => (new URLSearchParams(location.search).get('units') ?? 'gb') === u, unit);
    await page.waitForFunction((u) => document.querySelector('[data-testid=solution]').textContent.includes(u === 'gib' ? 'GiB' : 'GB'), unit);
    assertUnits(await panelSizes(page), unit);
    if (unit === 'gib') await page.screenshot({ path: path.join(ARTIFACTS, 'page-units-gib.png'), fullPage: true });
  }
  await page.close();
  assert.deepEqual(problems, []);
});

test('tied, gated, head and tight are fields of the form, and each changes the estimate as the CLI does', async () => {
  const page = await openPage(context, `${base}?model=llama-3.1-8b&mode=lora&gpu=rtx-4090`, problems);
  // A folded group's fields are made when it is opened.
  assert.equal(await page.$('#f-tied'), null);
  await page.click('form.controls summary:text-is("Architecture")');
  const steps = [
    ['#f-tied', 'true', 'tied=true'],
    ['#f-gated', 'false', 'gated=false'],
    ['#f-head', 'classifier', 'head=classifier'],
  ];
  let previous = await total(page);
  for (const [selector, value, pair] of steps) {
    await page.selectOption(selector, value);
    await page.waitForFunction((p) => location.search.includes(p), pair);
    const now = await total(page);
    assert.notEqual(now, previous, `${pair} changes the total`);
    assert.equal(now, cliEstimate(new URL(page.url()).search).total_bytes, `page = CLI after ${pair}`);
    previous = now;
  }
  assert.equal(await page.getAttribute('[data-testid=verdict]', 'data-verdict'), 'fits');
  await page.fill('#f-tight', '5');
  await page.waitForFunction(() => location.search.includes('tight=5'));
  await page.waitForFunction(() => document.querySelector('[data-testid=verdict]').dataset.verdict === 'tight');
  assert.equal(cliEstimate(new URL(page.url()).search).verdict, 'tight');
  await page.fill('#f-tight', '0');
  await page.waitForSelector('#err-tight:not(:empty)');
  assert.match(await page.textContent('#err-tight'), /above 0/);
  await page.close();
  assert.deepEqual(problems, []);
});

/** Whether a control is on the page (rendered at all, visible or not). */
async function present(page, selector) {
  return (await page.locator(selector).count()) > 0;
}

test('the runtime shows its own settings: vLLM\'s, then SGLang\'s, then neither; training hides it', async () => {
  const page = await openPage(context, `${base}?model=llama-3.1-8b&mode=inference`, problems);
  const serving = 'fieldset[data-legend=serving-runtime]';
  assert.ok(await page.isVisible('#f-runtime'), 'inference offers a runtime');
  assert.ok(!(await page.isVisible(serving)), 'no serving settings for transformers');
  assert.equal(await present(page, '[data-testid=serving]'), false, 'no serving panel for transformers');

  const shared = ['#f-max-model-len', '#f-max-num-seqs', '#f-max-num-batched-tokens'];
  const vllm = ['#f-gpu-memory-utilization', '#f-block-size', '#f-enforce-eager', '#f-profile-cudagraphs', '#f-cudagraph-mode', '#f-max-cudagraph-capture-size', '#f-attention-backend'];
  const sglang = ['#f-mem-fraction-static'];
  const llama = ['#f-quant', '#f-n-gpu-layers', '#f-ctx-size', '#f-parallel', '#f-cache-type-k', '#f-cache-type-v', '#f-flash-attn', '#f-ubatch-size'];
  const expect = async (shown, absent, why) => {
    for (const s of shown) assert.ok(await page.isVisible(s), `${s} shown: ${why}`);
    for (const s of absent) assert.equal(await present(page, s), false, `${s} absent: ${why}`);
  };

  await page.selectOption('#f-runtime', 'vllm');
  await page.waitForFunction(() => location.search.includes('runtime=vllm'));
  await expect([...shared, ...vllm], [...sglang, ...llama], 'vllm');
  assert.ok(await page.isVisible(serving));
  await page.waitForSelector('[data-testid=serving][data-runtime=vllm]');
  assert.equal(await total(page), cliEstimate(new URL(page.url()).search).total_bytes, 'page = CLI with vllm');
  // A pool is not a batch: the serving panel answers what fits, the solver steps aside.
  await page.waitForSelector('[data-testid=solution]', { state: 'detached' });

  await page.selectOption('#f-runtime', 'sglang');
  await page.waitForFunction(() => location.search.includes('runtime=sglang'));
  await expect([...shared, ...sglang], [...vllm, ...llama], 'sglang');
  await page.waitForSelector('[data-testid=serving][data-runtime=sglang]');
  await page.locator('form.controls').screenshot({ path: path.join(ARTIFACTS, 'controls-sglang.png') });

  await page.selectOption('#f-runtime', 'llama.cpp');
  await page.waitForFunction(() => location.search.includes('runtime=llama.cpp'));
  await expect(llama, [...shared, ...vllm, ...sglang], 'llama.cpp has no shared pool settings');
  await page.waitForSelector('[data-testid=serving][data-runtime="llama.cpp"]');

  await page.selectOption('#f-runtime', 'transformers');
  await page.waitForFunction(() => location.search.includes('runtime=transformers') || !location.search.includes('runtime='));
  await expect([], [...shared, ...vllm, ...sglang, ...llama], 'transformers');
  assert.ok(!(await page.isVisible(serving)));
  await page.waitForSelector('[data-testid=serving]', { state: 'detached' });
  await page.waitForSelector('[data-testid=solution]');

  // Training runs in PyTorch: the runtime select goes away with transformers...
  await page.selectOption('#f-mode', 'full');
  await page.waitForSelector('#f-runtime', { state: 'detached' });
  await page.selectOption('#f-mode', 'inference');
  await page.selectOption('#f-runtime', 'vllm');
  await page.waitForSelector('[data-testid=serving][data-runtime=vllm]');
  const served = await total(page);
  // ...but stays, with the refusal explained, while it names a serving runtime, so the user can
  // see and fix what is refused; the serving settings hide and the last good result stays.
  await page.selectOption('#f-mode', 'full');
  await page.waitForSelector('[data-testid=validation]:not(.hidden)');
  assert.match(await page.textContent('[data-testid=validation]'), /runtime: .*inference/);
  assert.ok(await page.isVisible('#f-runtime'), 'the refused runtime stays visible');
  await expect([], [...shared, ...vllm], 'training');
  assert.equal(await total(page), served, 'the last good estimate stays');
  assert.ok(await page.isVisible('[data-testid=serving]'), 'the last good serving answer stays');
  await page.selectOption('#f-runtime', 'transformers');
  await page.waitForSelector('[data-testid=validation].hidden', { state: 'attached' });
  await page.waitForSelector('#f-runtime', { state: 'detached' });
  assert.equal(await total(page), cliEstimate(new URL(page.url()).search).total_bytes);
  await page.close();
  assert.deepEqual(problems, []);
});

/** What the serving panel shows, from its data- attributes. */
async function servingShown(page) {
  return page.evaluate(() => {
    const data = (id) => document.querySelector(`[data-testid=${id}]`)?.dataset ?? {};
    const num = (v) => (v === undefined || v === '' ? null : Number(v));
    return {
      runtime: data('serving').runtime,
      starts: data('serving').starts === 'true',
      kv_pool_bytes: num(data('kv-pool').bytes),
      kv_tokens: num(data('kv-tokens').tokens),
      kv_blocks: num(data('kv-blocks').blocks),
      max_concurrency: num(data('max-concurrency').value),
      context_tokens: num(data('max-concurrency').context),
      settings: [...document.querySelectorAll('[data-testid=serving-settings] li')].map((li) => [li.dataset.setting, li.classList.contains('default')]),
    };
  });
}

test('a vLLM and an SGLang scenario show the CLI\'s pool, tokens, concurrency and serving answers', async () => {
  for (const [query, name] of [[VLLM, 'vllm'], [SGLANG, 'sglang']]) {
    const expected = cliEstimate(query).serving;
    const page = await openPage(context, `${base}?${query}`, problems);
    await page.waitForSelector('[data-testid=serving]');
    const shown = await servingShown(page);
    assert.deepEqual(shown, {
      runtime: expected.runtime,
      starts: expected.starts,
      kv_pool_bytes: expected.kv_pool_bytes,
      kv_tokens: expected.kv_tokens,
      kv_blocks: expected.kv_blocks,
      max_concurrency: expected.max_concurrency,
      context_tokens: expected.context_tokens,
      settings: expected.settings.map((s) => [s.key, s.default_from !== null]),
    }, `${name}: the page's serving figures are the CLI's`);
    const label = { vllm: 'vLLM', sglang: 'SGLang' }[name];
    const answer = await page.textContent('[data-testid=serving-answer]');
    assert.equal(answer, `${label} starts: ${expected.max_concurrency.toFixed(2)} concurrent requests of ${expected.context_tokens.toLocaleString('en-US')} tokens`);
    for (const s of expected.settings.filter((s) => s.default_from)) {
      assert.ok((await page.textContent(`[data-setting="${s.key}"]`)).includes(s.default_from), `${name}: ${s.key} says where its default came from`);
    }

    // The users answers are `vramfit fit --users`'s, for one user and for 32.
    for (const users of [1, 32]) {
      if (users !== 1) {
        await page.fill('#f-users', String(users));
        await page.waitForSelector(`[data-testid=serving-plan][data-users="${users}"]`);
      }
      const fit = cliFit(query, users);
      const plan = await page.$eval('[data-testid=serving-plan]', (e) => ({ ...e.dataset }));
      assert.deepEqual(plan, {
        testid: 'serving-plan',
        users: String(users),
        maxContext: fit.max_context === null ? '' : String(fit.max_context),
        smallestGpu: fit.smallest_gpu ?? '',
        fewestGpus: fit.fewest_gpus === null ? '' : String(fit.fewest_gpus),
      }, `${name}: ${users} users as vramfit fit --users ${users}`);
      if (fit.max_context !== null) {
        assert.match(await page.textContent('[data-testid=max-context]'), new RegExp(`^${fit.max_context.toLocaleString('en-US')} tokens$`));
      }
    }
    // The curve is drawn: a coloured line across the plot, not a blank canvas.
    const scale = await page.evaluate(() => window.devicePixelRatio);
    const columns = await colouredColumns(page, 'canvas#serving-curve');
    const inked = columns.counts.filter((c) => c >= 2 * scale).length;
    assert.ok(inked > columns.width * 0.5, `${name}: the curve spans the plot (${inked} of ${columns.width} columns)`);

    // A bad users count or a refused setting keeps the last good answers on screen.
    await page.fill('#f-users', '0');
    await page.waitForSelector('#err-users:not(:empty)');
    assert.equal(await page.getAttribute('[data-testid=serving-plan]', 'data-users'), '32');
    const field = name === 'vllm' ? '#f-gpu-memory-utilization' : '#f-mem-fraction-static';
    await page.fill(field, '1.5');
    await page.waitForSelector(`#err-${field.slice(3)}:not(:empty)`);
    assert.deepEqual(await servingShown(page), shown, `${name}: a refused value keeps the last good pool`);

    // Sizes follow the unit switch.
    assert.match(await page.textContent('[data-testid=kv-pool]'), /^\d+\.\d\d GB$/);
    await page.selectOption('#f-units', 'gib');
    await page.waitForFunction(() => /GiB$/.test(document.querySelector('[data-testid=kv-pool]').textContent));
    assert.equal(await page.textContent('[data-testid=kv-pool]'), `${(expected.kv_pool_bytes / 2 ** 30).toFixed(2)} GiB`);
    await page.selectOption('#f-units', 'gb');
    await page.fill('#f-users', '32');
    await page.waitForSelector('#err-users:empty', { state: 'attached' });
    await page.locator('section.serving').screenshot({ path: path.join(ARTIFACTS, `serving-${name}.png`) });
    if (name === 'vllm') await page.screenshot({ path: path.join(ARTIFACTS, 'page-serving-vllm.png'), fullPage: true });
    await page.close();
  }
  assert.deepEqual(problems, []);
});

test('the vLLM release is a setting: 0.19 sizes the pool by its own rules, as the CLI does, and the settings say which release\'s default applied', async () => {
  const query = 'model=llama-3.1-8b&mode=inference&runtime=vllm&gpu=h100-80&max-model-len=8192';
  const latest = cliEstimate(query).serving;
  const older = cliEstimate(`${query}&vllm-version=0.19`).serving;
  // 0.19 budgets 0.9 of the GPU (0.92 from 0.20 on) and leaves the CUDA graphs outside it.
  assert.ok(older.kv_pool_bytes < latest.kv_pool_bytes, 'the older release leaves a smaller pool');
  const page = await openPage(context, `${base}?${query}`, problems);
  await page.waitForSelector('[data-testid=serving]');
  assert.equal((await servingShown(page)).kv_pool_bytes, latest.kv_pool_bytes);
  await page.fill('#f-vllm-version', '0.19');
  await page.waitForFunction((b) => document.querySelector('[data-testid=kv-pool]')?.dataset.bytes === String(b), older.kv_pool_bytes);
  assert.equal((await servingShown(page)).kv_tokens, older.kv_tokens);
  const utilization = older.settings.find((s) => s.key === 'gpu-memory-utilization');
  assert.match(utilization.default_from, /before 0\.20/);
  assert.ok((await page.textContent('[data-setting="gpu-memory-utilization"]')).includes(utilization.default_from));
  await page.close();
  assert.deepEqual(problems, []);
});

test('a vLLM scenario that will not start shows vLLM\'s own reason', async () => {
  const query = 'model=llama-3.1-8b&mode=inference&runtime=vllm&gpu=rtx-4090&max-model-len=1000000';
  const expected = cliEstimate(query).serving;
  assert.equal(expected.starts, false);
  const page = await openPage(context, `${base}?${query}`, problems);
  await page.waitForSelector('[data-testid=serving][data-starts=false]');
  assert.equal(await page.textContent('[data-testid=serving-reason]'), expected.reason, 'the reason, verbatim');
  assert.match(expected.reason, /estimated maximum model length is \d+/);
  assert.equal(await page.getAttribute('[data-testid=serving-refusal]', 'role'), 'alert');
  assert.equal(await present(page, '[data-testid=serving-answer]'), false, 'no "starts" line');
  assert.equal(Number(await page.getAttribute('[data-testid=kv-pool]', 'data-bytes')), expected.kv_pool_bytes);
  assert.equal(await page.getAttribute('[data-testid=serving-plan]', 'data-max-context'), String(cliFit(query, 1).max_context));
  await page.locator('section.serving').screenshot({ path: path.join(ARTIFACTS, 'serving-refused.png') });
  await page.close();
  assert.deepEqual(problems, []);
});

test('llama.cpp shows its slots, the cache and system RAM as the CLI does, and its best quant, GPU layers and slots for a number of users as vramfit fit does', async () => {
  const expected = cliEstimate(LLAMA_CPP).serving;
  const fit = cliFit(LLAMA_CPP, 1);
  const page = await openPage(context, `${base}?${LLAMA_CPP}`, problems);
  await page.waitForSelector('[data-testid=serving][data-runtime="llama.cpp"]');
  const shown = await servingShown(page);
  assert.deepEqual(
    [shown.kv_pool_bytes, shown.kv_tokens, shown.kv_blocks, shown.max_concurrency, shown.context_tokens],
    [expected.kv_pool_bytes, expected.kv_tokens, expected.kv_blocks, expected.max_concurrency, expected.context_tokens]);
  assert.deepEqual(shown.settings, expected.settings.map((s) => [s.key, s.default_from !== null]));
  assert.equal(await page.textContent('[data-testid=serving-answer]'),
    `llama.cpp starts: ${expected.max_concurrency} slots of ${expected.context_tokens.toLocaleString('en-US')} tokens`);
  assert.equal(Number(await page.getAttribute('[data-testid=host-bytes]', 'data-bytes')), expected.host_bytes);
  const host = await page.$$eval('[data-host-component]', (l) => l.map((e) => [e.dataset.hostComponent, Number(e.dataset.bytes)]));
  assert.deepEqual(host, expected.host_components.map((c) => [c.id, c.bytes]), 'system RAM, part by part');
  const plan = await page.$eval('[data-testid=serving-plan]', (e) => ({ ...e.dataset }));
  assert.deepEqual(plan, {
    testid: 'serving-plan',
    users: '1',
    maxContext: fit.max_context === null ? '' : String(fit.max_context),
    bestQuant: fit.best_quant ?? '',
    maxGpuLayers: fit.max_gpu_layers === null ? '' : String(fit.max_gpu_layers),
    smallestGpu: fit.smallest_gpu ?? '',
    fewestGpus: fit.fewest_gpus === null ? '' : String(fit.fewest_gpus),
  });
  // Each user is a slot (-np) of the context: four users, as `vramfit fit --users 4` answers.
  assert.equal(await present(page, 'canvas#serving-curve'), true);
  await page.fill('#f-users', '4');
  await page.waitForSelector('[data-testid=serving-plan][data-users="4"]');
  assert.equal(await page.getAttribute('[data-testid=serving-plan]', 'data-max-context'), String(cliFit(LLAMA_CPP, 4).max_context));
  await page.locator('section.serving').screenshot({ path: path.join(ARTIFACTS, 'serving-llamacpp.png') });
  // A pool: the users input and the curve stay.
  await page.selectOption('#f-runtime', 'vllm');
  await page.waitForSelector('canvas#serving-curve');
  await page.waitForSelector('#f-users');
  await page.close();
  assert.deepEqual(problems, []);
});

test('the serving panel at 360 px, light and dark: no horizontal scroll', async () => {
  for (const colorScheme of ['light', 'dark']) {
    const narrow = await browser.newContext({ viewport: { width: 360, height: 780 }, colorScheme, deviceScaleFactor: 2 });
    for (const [query, name] of [[VLLM, 'vllm'], ['model=llama-3.1-8b&mode=inference&runtime=vllm&gpu=rtx-4090&max-model-len=1000000', 'refused'], [LLAMA_CPP, 'llamacpp']]) {
      const page = await openPage(narrow, `${base}?${query}`, problems);
      await page.waitForSelector('[data-testid=serving]');
      const overflow = await page.evaluate(() => document.documentElement.scrollWidth - window.innerWidth);
      assert.ok(overflow <= 1, `${name} ${colorScheme}: no horizontal scroll at 360 px (overflow ${overflow})`);
      const panel = await page.$eval('section.serving', (e) => e.scrollWidth - e.clientWidth);
      assert.ok(panel <= 1, `${name} ${colorScheme}: nothing scrolls inside the panel (${panel})`);
      await page.locator('section.serving').screenshot({ path: path.join(ARTIFACTS, `serving-${name}-360-${colorScheme}.png`) });
      await page.close();
    }
    await narrow.close();
  }
  assert.deepEqual(problems, []);
});
