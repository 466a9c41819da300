// End-to-end tests of the model picker in headless Chromium: it finds models by a fragment with
// the same search as `vramfit list models --search`, by mouse and by keyboard alone (WAI-ARIA's
// combobox: aria-expanded, aria-activedescendant following the active option), and the total
// after a pick equals `vramfit estimate --json` for the URL it sets. axe checks it open.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { serve, origin, launch, cliEstimate, total, openPage, mounted, BIN, DIST, SUB_PATH } from './harness.mjs';

const START = 'model=llama-3.1-8b&mode=inference&gpu=h100-80';

let server, browser, context, base, problems;

before(async () => {
  server = await serve(DIST, [SUB_PATH]);
  base = `${origin(server)}${SUB_PATH}`;
  browser = await launch();
  context = await browser.newContext({ viewport: { width: 1280, height: 1000 } });
  problems = [];
});

after(async () => {
  await browser?.close();
  server?.close();
});

/** The preset ids the CLI's search finds. */
function cliSearch(search) {
  const models = JSON.parse(execFileSync(BIN, ['list', 'models', '--json', '--search', search], { encoding: 'utf8' }));
  return models.map((m) => m.id);
}

/** The preset ids of the options the picker shows, in order. */
async function shownIds(page) {
  return page.$$eval('#model-list [role=option]:not([hidden])', (options) => options.map((o) => o.dataset.value));
}

test('typing a fragment shows what vramfit list models --search finds; a click picks it and the total is the CLI\'s', async () => {
  const page = await openPage(context, `${base}?${START}`, problems);
  const input = '#f-model';
  assert.equal(await page.inputValue(input), 'Llama-3.1-8B');
  assert.equal(await page.getAttribute(input, 'role'), 'combobox');
  assert.equal(await page.getAttribute(input, 'aria-expanded'), 'false');
  // The picker offers the catalogue; the CLI also lists the calibration set's models.
  const offered = await page.$$eval('#model-list [role=option]', (options) => options.map((o) => o.dataset.value));
  for (const search of ['qwen3 30', 'llama 70', 'moe', 'gemma']) {
    await page.fill(input, search);
    assert.equal(await page.getAttribute(input, 'aria-expanded'), 'true');
    const shown = await shownIds(page);
    assert.ok(shown.length > 0, search);
    assert.deepEqual(shown, cliSearch(search).filter((id) => offered.includes(id)), `the picker's "${search}" is the CLI's`);
  }
  await page.fill(input, 'qwen3 30');
  const entry = page.locator('#model-list [role=option]:not([hidden])', { hasText: 'Qwen3-30B-A3B' });
  assert.match(await entry.textContent(), /Qwen3-30B-A3B30\.53B total, 3\.35B active · moe/);
  await entry.click();
  await page.waitForFunction(() => location.search.includes('model=qwen3-30b-a3b'));
  assert.equal(await page.inputValue(input), 'Qwen3-30B-A3B');
  assert.equal(await page.getAttribute(input, 'aria-expanded'), 'false');
  const query = new URL(page.url()).search;
  assert.equal(await total(page), cliEstimate(query).total_bytes, `page = CLI for ${query}`);
  assert.notEqual(await total(page), cliEstimate(START).total_bytes, 'the pick changed the total');
  await page.close();
  assert.deepEqual(problems, []);
});

test('by keyboard alone: type, arrow to an option (aria-activedescendant follows), Enter picks; Escape and Tab close', async () => {
  const page = await openPage(context, `${base}?${START}`, problems);
  const input = '#f-model';
  const active = () => page.evaluate(() => {
    const box = document.querySelector('#f-model');
    const id = box.getAttribute('aria-activedescendant');
    const selected = [...document.querySelectorAll('#model-list [aria-selected=true]')].map((o) => o.id);
    return { id, selected, value: id && document.getElementById(id).dataset.value };
  });
  await page.focus(input);
  await page.keyboard.press('Control+A');
  await page.keyboard.type('llama');
  const offered = await page.$$eval('#model-list [role=option]', (options) => options.map((o) => o.dataset.value));
  const llamas = cliSearch('llama').filter((id) => offered.includes(id));
  assert.deepEqual(await shownIds(page), llamas);
  assert.equal((await active()).id, null, 'no option is active while typing');
  await page.keyboard.press('ArrowDown');
  let now = await active();
  assert.deepEqual([now.value, now.selected], [llamas[0], [now.id]]);
  await page.keyboard.press('ArrowDown');
  now = await active();
  assert.deepEqual([now.value, now.selected], [llamas[1], [now.id]]);
  await page.keyboard.press('End');
  assert.equal((await active()).value, llamas.at(-1));
  await page.keyboard.press('Home');
  assert.equal((await active()).value, llamas[0]);
  await page.keyboard.press('ArrowUp');
  assert.equal((await active()).value, llamas[0], 'ArrowUp stays on the first');
  await page.keyboard.press('Escape');
  assert.equal(await page.getAttribute(input, 'aria-expanded'), 'false');
  assert.equal(await page.inputValue(input), 'Llama-3.1-8B', 'Escape puts the chosen name back');
  assert.ok(new URL(page.url()).search.includes('model=llama-3.1-8b'), 'Escape picks nothing');

  await page.keyboard.press('Control+A');
  await page.keyboard.type('qwen3 30');
  await page.keyboard.press('ArrowDown');
  now = await active();
  assert.equal(now.value, 'qwen3-30b-a3b');
  await page.keyboard.press('Enter');
  await page.waitForFunction(() => location.search.includes('model=qwen3-30b-a3b'));
  assert.equal((await active()).id, null);
  const query = new URL(page.url()).search;
  assert.equal(await total(page), cliEstimate(query).total_bytes, `page = CLI for ${query}`);

  await page.keyboard.type('x');
  assert.equal(await page.getAttribute(input, 'aria-expanded'), 'true');
  await page.keyboard.press('Tab');
  assert.notEqual(await page.evaluate(() => document.activeElement.id), 'f-model', 'Tab leaves');
  assert.equal(await page.getAttribute(input, 'aria-expanded'), 'false');
  assert.equal(await page.inputValue(input), 'Qwen3-30B-A3B');
  await page.close();
  assert.deepEqual(problems, []);
});

test('custom / by size is offered while the box is empty, and picking it leaves the shape to params', async () => {
  const page = await openPage(context, `${base}?${START}&params=8B`, problems);
  await page.fill('#f-model', '');
  const custom = page.locator('#model-list [role=option][data-value=""]');
  assert.equal(await custom.isVisible(), true);
  await custom.click();
  await page.waitForFunction(() => !location.search.includes('model='));
  assert.equal(await page.inputValue('#f-model'), '');
  assert.equal(await page.getAttribute('#f-model', 'placeholder'), 'custom / by size');
  const query = new URL(page.url()).search;
  assert.equal(await total(page), cliEstimate(query).total_bytes, `page = CLI for ${query}`);
  await page.fill('#f-model', 'q');
  assert.equal(await custom.isVisible(), false, 'not while something is typed');
  await page.close();
  assert.deepEqual(problems, []);
});

test('axe finds no serious or critical violations with the list open', async () => {
  const axeContext = await browser.newContext({ bypassCSP: true });
  const page = await axeContext.newPage();
  await page.goto(`${base}?${START}`);
  await page.waitForSelector('[data-testid=total]');
  await mounted(page);
  await page.focus('#f-model');
  await page.keyboard.press('Control+A');
  await page.keyboard.type('llama');
  await page.keyboard.press('ArrowDown');
  assert.ok((await page.getAttribute('#f-model', 'aria-activedescendant')).startsWith('model-opt-'));
  await page.addScriptTag({ path: 'node_modules/axe-core/axe.min.js' });
  const violations = await page.evaluate(async () => {
    const result = await window.axe.run(document, { resultTypes: ['violations'] });
    return result.violations.filter((v) => ['serious', 'critical'].includes(v.impact)).map((v) => `${v.id}: ${v.nodes.length} nodes, e.g. ${v.nodes[0]?.html}`);
  });
  assert.deepEqual(violations, []);
  await axeContext.close();
});
