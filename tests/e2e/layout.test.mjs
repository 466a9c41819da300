// End-to-end tests of the page's layout in headless Chromium: the answer first on a phone, no
// horizontal scroll at any width, fields shown by mode, embeds that show exactly what `show=`
// lists, and the first screen. The CLI is the oracle for every total. Screenshots of the default,
// a training OOM and an inference scenario at 390, 768 and 1280 px land in test-artifacts/.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import fs from 'node:fs';
import path from 'node:path';
import { serve, origin, launch, cliEstimate, total, openPage, mounted, DIST, ARTIFACTS, SUB_PATH } from './harness.mjs';

const OOM = 'model=llama-3.1-8b&mode=full&gpu=rtx-4090&batch=8';
const INFERENCE = 'model=llama-3.1-8b&mode=inference&runtime=vllm&gpu=rtx-4090&max-model-len=8192';
const PHONE = { width: 390, height: 844 };

let server, parentServer, browser, base, problems;

before(async () => {
  fs.mkdirSync(ARTIFACTS, { recursive: true });
  server = await serve(DIST, [SUB_PATH]);
  base = `${origin(server)}${SUB_PATH}`;
  browser = await launch();
  problems = [];
});

after(async () => {
  await browser?.close();
  server?.close();
  parentServer?.close();
});

/** The verdict's box in the viewport's coordinates. */
async function verdictBox(page) {
  return page.$eval('[data-testid=verdict]', (e) => {
    const r = e.getBoundingClientRect();
    return { top: r.top, bottom: r.bottom, height: window.innerHeight };
  });
}

function assertInView(box, why) {
  assert.ok(box.top >= 0 && box.bottom <= box.height, `${why}: verdict at ${box.top}-${box.bottom} of ${box.height}`);
}

test('at 390 px the verdict is in the first viewport, cold and on a training OOM, and stays there while the form scrolls', async () => {
  const phone = await browser.newContext({ viewport: PHONE, deviceScaleFactor: 1 });
  for (const [query, verdict] of [['', null], [OOM, 'oom']]) {
    const page = await openPage(phone, `${base}?${query}`, problems);
    assertInView(await verdictBox(page), `cold ?${query}`);
    if (verdict) assert.equal(await page.getAttribute('[data-testid=verdict]', 'data-verdict'), verdict);
    // The answer comes before the form on screen.
    const formTop = await page.$eval('form.controls', (f) => f.getBoundingClientRect().top);
    assert.ok((await verdictBox(page)).bottom <= formTop, 'the answer sits above the form');
    // Scrolled down to the budget fields, the answer is still on screen, and follows an edit.
    await page.$eval('#f-margin', (e) => e.scrollIntoView({ block: 'center' }));
    assert.ok(await page.evaluate(() => window.scrollY) > 600, 'the form really scrolled');
    assertInView(await verdictBox(page), `scrolled ?${query}`);
    await page.fill('#f-margin', '20GB');
    await page.waitForFunction(() => new URLSearchParams(location.search).get('margin') === '20000MB');
    assert.equal(await total(page), cliEstimate(new URL(page.url()).search).total_bytes);
    assertInView(await verdictBox(page), `after an edit, ?${query}`);
    await page.close();
  }
  await phone.close();

  // Wide: the result column stays beside the form as the page scrolls.
  const wide = await browser.newContext({ viewport: { width: 1280, height: 800 } });
  const page = await openPage(wide, `${base}?${OOM}`, problems);
  await page.$eval('#f-margin', (e) => e.scrollIntoView({ block: 'center' }));
  assert.ok(await page.evaluate(() => window.scrollY) > 300, 'the form really scrolled');
  assertInView(await verdictBox(page), 'wide, scrolled');
  await wide.close();
  assert.deepEqual(problems, []);
});

test('no horizontal overflow at 360, 390, 768 and 1280 px; screenshots of three scenarios at three widths', async () => {
  for (const width of [360, 390, 768, 1280]) {
    const context = await browser.newContext({ viewport: { width, height: width < 700 ? 844 : 800 } });
    for (const [name, query] of [['default', ''], ['training-oom', OOM], ['inference', INFERENCE]]) {
      const page = await openPage(context, `${base}?${query}`, problems);
      const overflow = await page.evaluate(() => document.documentElement.scrollWidth - window.innerWidth);
      assert.ok(overflow <= 0, `${name} at ${width} px overflows by ${overflow}`);
      if (width !== 360) await page.screenshot({ path: path.join(ARTIFACTS, `layout-${name}-${width}.png`) });
      await page.close();
    }
    await context.close();
  }
  assert.deepEqual(problems, []);
});

test('fields show by mode: LoRA fields leave for full fine-tuning and return with their value; the URL keeps them', async () => {
  const context = await browser.newContext({ viewport: { width: 1280, height: 1000 } });
  const page = await openPage(context, `${base}?model=llama-3.1-8b&mode=lora&lora-rank=64&gpu=a100-80`, problems);
  const present = async (selector) => (await page.locator(selector).count()) > 0;
  const lora = ['#f-lora-rank', '#f-lora-targets', '#f-lora-dropout'];
  const training = ['#f-optimizer', '#f-grad-accum', '#f-checkpointing'];
  const inference = ['#f-runtime', '#f-prompt', '#f-cache'];
  const expect = async (shown, absent, why) => {
    for (const s of shown) assert.ok(await present(s), `${s} shown: ${why}`);
    for (const s of absent) assert.equal(await present(s), false, `${s} hidden: ${why}`);
    assert.equal(await total(page), cliEstimate(new URL(page.url()).search).total_bytes, `page = CLI: ${why}`);
  };
  await expect([...lora, ...training], inference, 'lora');
  assert.equal(await page.inputValue('#f-lora-rank'), '64');

  await page.selectOption('#f-mode', 'full');
  await page.waitForSelector('#f-lora-rank', { state: 'detached' });
  await expect(training, [...lora, ...inference], 'full');
  assert.equal(new URLSearchParams(new URL(page.url()).search).get('lora-rank'), '64', 'the URL keeps the hidden value');

  await page.selectOption('#f-mode', 'inference');
  await page.waitForSelector('#f-optimizer', { state: 'detached' });
  await expect(inference, [...lora, ...training], 'inference');

  await page.selectOption('#f-mode', 'qlora');
  await page.waitForSelector('#f-lora-rank');
  await expect([...lora, ...training], inference, 'qlora');
  assert.equal(await page.inputValue('#f-lora-rank'), '64', 'the value comes back');
  await context.close();
  assert.deepEqual(problems, []);
});

/** Each panel `show=` names, the scenario it is shown on, and what only it renders. */
const PANELS = {
  inputs: ['form.input-strip #f-model', 'form.input-strip #f-gpu', 'form.input-strip #f-mode', 'form.input-strip #f-batch', 'form.input-strip #f-seq'],
  summary: ['[data-testid=total]', '[data-testid=verdict]'],
  chart: ['canvas#memory-chart'],
  curves: ['[data-testid=curves] canvas'],
  breakdown: ['section.breakdown [data-component=weights]'],
  solver: ['[data-testid=solution]'],
  tables: ['section.tables'],
  gpu: ['[data-testid=smi-paste]'],
  measured: ['[data-testid=measured-paste]'],
  serving: ['[data-testid=serving]'],
  speed: ['[data-testid=speed] [data-testid=speed-output]'],
  accuracy: ['section.accuracy [data-testid=accuracy-kind]'],
};
/** What an embed that lists panels never shows unless asked: the page's own furniture. */
const FURNITURE = ['.site-header', 'section.start', 'details.lesson-examples', 'form.controls:not(.input-strip)', 'section.share', '.site-footer'];

test('every show= panel renders alone in a cross-origin iframe; an unknown panel is named', async () => {
  const frameOrigin = new URL(base).origin;
  const frames = Object.keys(PANELS).map((panel) => {
    const query = ['serving', 'speed'].includes(panel) ? INFERENCE : 'model=llama-3.1-8b&mode=qlora&gpu=t4';
    return `<iframe title="${panel}" src="${base}?embed=1&show=${panel}&${query}" width="900" height="600"></iframe>`;
  });
  const unknown = `<iframe title="unknown" src="${base}?embed=1&show=chart,charts&model=llama-3.1-8b" width="900" height="400"></iframe>`;
  parentServer = await serve(DIST, ['/nothing/'], { '/lesson.html': `<!doctype html><title>lesson</title><link rel="icon" href="data:,">${frames.join('')}${unknown}` });
  const parentUrl = `${origin(parentServer, 'localhost')}/lesson.html`;
  assert.notEqual(new URL(parentUrl).origin, frameOrigin);
  const context = await browser.newContext({ viewport: { width: 1000, height: 800 } });
  const page = await context.newPage();
  page.on('pageerror', (e) => problems.push(`parent page error: ${e.message}`));
  page.on('console', (m) => { if (m.type() === 'error') problems.push(`console error: ${m.text()}`); });
  await page.goto(parentUrl);
  for (const [panel, selectors] of Object.entries(PANELS)) {
    const frame = await (await page.waitForSelector(`iframe[title=${panel}]`)).contentFrame();
    assert.equal(new URL(frame.url()).origin, frameOrigin);
    for (const selector of selectors) await frame.waitForSelector(selector, { state: 'attached', timeout: 30_000 });
    for (const [other, theirs] of Object.entries(PANELS)) {
      if (other === panel) continue;
      for (const selector of theirs) assert.equal(await frame.$(selector), null, `show=${panel} has no ${other} (${selector})`);
    }
    for (const selector of FURNITURE) assert.equal(await frame.$(selector), null, `show=${panel} has no ${selector}`);
  }
  const frame = await (await page.waitForSelector('iframe[title=unknown]')).contentFrame();
  await frame.waitForSelector('canvas#memory-chart');
  const warning = await frame.waitForSelector('[data-testid=url-warnings] li[data-param=show]');
  assert.match(await warning.textContent(), /no panel named charts; show= takes inputs, summary, chart, curves, breakdown/);
  assert.ok(await frame.isVisible('[data-testid=url-warnings]'), 'the warning is visible');
  await page.screenshot({ path: path.join(ARTIFACTS, 'embed-every-panel.png'), fullPage: true });
  await context.close();
  assert.deepEqual(problems, []);
});

test('the first screen explains itself and offers three starting points, each one history entry', async () => {
  const context = await browser.newContext({ viewport: PHONE });
  const page = await openPage(context, base, problems);
  assert.ok(await page.isVisible('section.start'), 'a cold visit explains itself');
  assert.equal(await page.locator('section.start button').count(), 3);
  assert.equal(await total(page), cliEstimate('').total_bytes, 'doing nothing still gives an answer');
  const starts = [
    ['fine-tune', 'model=llama-3.1-8b&mode=qlora&batch=2&checkpointing=full&gpu=rtx-4090', 'fits'],
    ['serve', INFERENCE, 'fits'],
  ];
  for (const [start, query, verdict] of starts) {
    await page.click(`[data-start=${start}]`);
    // The URL lists what differs from the defaults: the RTX 4090 is the default GPU.
    await page.waitForFunction((q) => location.search === `?${q.replace('&gpu=rtx-4090', '')}`, query);
    assert.equal(await total(page), cliEstimate(query).total_bytes, start);
    assert.equal(await page.getAttribute('[data-testid=verdict]', 'data-verdict'), verdict, start);
    await page.goBack();
    await page.waitForFunction(() => location.search === '');
    assert.equal(await total(page), cliEstimate('').total_bytes, `Back undoes ${start}`);
  }
  await page.click('[data-start=lesson]');
  await page.waitForFunction(() => document.querySelector('[data-testid=total]').dataset.bytes === '5013382810');
  assert.ok(await page.$eval('details.lesson-examples', (d) => d.open), 'the examples are open');
  await page.click('[data-lesson=full-ft-8b]');
  await page.waitForFunction(() => document.querySelector('[data-testid=total]').dataset.bytes === '97573741824');

  // With a scenario in the URL the page goes straight to it.
  const returning = await openPage(context, `${base}?${OOM}`, problems);
  assert.equal(await returning.$('section.start'), null);
  await context.close();

  // Accessible as it first appears, on a phone and wide.
  for (const viewport of [PHONE, { width: 1280, height: 800 }]) {
    const axeContext = await browser.newContext({ bypassCSP: true, viewport });
    const axePage = await axeContext.newPage();
    await axePage.goto(base);
    await axePage.waitForSelector('[data-testid=total]');
    await mounted(axePage);
    await axePage.addScriptTag({ path: 'node_modules/axe-core/axe.min.js' });
    const violations = await axePage.evaluate(async () => {
      const result = await window.axe.run(document, { resultTypes: ['violations'] });
      return result.violations.filter((v) => ['serious', 'critical'].includes(v.impact)).map((v) => `${v.id}: ${v.nodes.length} nodes, e.g. ${v.nodes[0]?.html}`);
    });
    assert.deepEqual(violations, [], `first screen at ${viewport.width} px`);
    await axeContext.close();
  }
  assert.deepEqual(problems, []);
});

test('the answer comes from the shell alone: the panels module is asked for after the answer is painted, and not at all by an embed without panels', async () => {
  const context = await browser.newContext();
  const page = await openPage(context, `${base}?model=llama-3.1-8b&mode=qlora&gpu=t4`, problems);
  const timeline = await page.evaluate(() => {
    const fetched = (end) => performance.getEntriesByType('resource').find((r) => r.name.endsWith(end));
    return {
      result: performance.getEntriesByName('vramfit:first-result')[0].startTime,
      paint: performance.getEntriesByName('first-contentful-paint')[0].startTime,
      panels: fetched('vramfit-panels_bg.wasm')?.startTime,
      shell: fetched('vramfit-web_bg.wasm')?.startTime,
    };
  });
  assert.ok(timeline.shell < timeline.result, 'the shell gives the answer');
  assert.ok(timeline.panels > timeline.paint, `the panels are asked for after the first paint (${JSON.stringify(timeline)})`);
  assert.ok(await page.isVisible('section.breakdown'), 'and then fill their slots');

  const embed = await openPage(context, `${base}?embed=1&show=summary,chart&model=llama-3.1-8b`, problems);
  await embed.waitForTimeout(300);
  const modules = await embed.evaluate(() => performance.getEntriesByType('resource').map((r) => r.name).filter((n) => n.endsWith('.wasm')));
  assert.deepEqual(modules.map((n) => n.split('/').at(-1)), ['vramfit-web_bg.wasm']);
  await context.close();
  assert.deepEqual(problems, []);
});

test('a 64 GB Mac with a 70B Q4_K_M model: the verdict is the working-set rule\'s, and raising the wired limit changes it as the CLI does', async () => {
  const query = 'model=llama-3.1-70b&mode=inference&runtime=llama.cpp&gpu=m2-max-64&quant=Q4_K_M';
  const context = await browser.newContext({ viewport: { width: 1280, height: 900 } });
  const page = await openPage(context, `${base}?${query}`, problems);
  const gb = (bytes) => `${(bytes / 1e9).toFixed(2)} GB`;
  for (const [wired, verdict] of [['', 'tight'], ['58GiB', 'fits']]) {
    const expected = cliEstimate(wired ? `${query}&wired-limit=${wired}` : query);
    assert.equal(expected.verdict, verdict, `the CLI's verdict with wired-limit=${wired || 'unset'}`);
    if (wired) await page.fill('#f-wired-limit', wired);
    await page.waitForFunction((v) => document.querySelector('[data-testid=verdict]').dataset.verdict === v, verdict);
    assert.equal(await total(page), expected.total_bytes);
    // Metal's working set is ¾ of a 64 GB Mac's memory: 48 GiB, unless the wired limit is raised.
    assert.ok((await page.textContent('.verdict-line')).includes(`(${gb(expected.capacity_bytes)} capacity)`), `capacity ${gb(expected.capacity_bytes)}`);
  }
  assert.equal(cliEstimate(query).capacity_bytes, 48 * 2 ** 30);
  await context.close();
  assert.deepEqual(problems, []);
});
