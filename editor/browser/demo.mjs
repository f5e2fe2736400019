// The first five minutes of a fresh clone, in headless Debian Chromium:
// TestDemoGalleryInChromium (demo_browser_test.go) starts `ruleagent serve`
// on the shipped chains with NO LLM configured, then runs this script with
//   BASE_URL   the server, CHROMIUM the browser, ARTEFACTS where screenshots go.
// Each example chain runs from the editor's Run panel on the built-in demo
// model, then the front-end tool page runs under /examples/. It prints one
// line per check and exits non-zero on the first failure.
import { chromium } from 'playwright-core';
import assert from 'node:assert/strict';
import { mkdtempSync, mkdirSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

const { BASE_URL, CHROMIUM, ARTEFACTS } = process.env;
for (const [k, v] of Object.entries({ BASE_URL, CHROMIUM, ARTEFACTS })) if (!v) throw new Error(`${k} is not set`);
mkdirSync(ARTEFACTS, { recursive: true });

const profile = mkdtempSync(join(tmpdir(), 'ruleagent-chromium-'));
const context = await chromium.launchPersistentContext(profile, {
  executablePath: CHROMIUM,
  headless: true,
  args: ['--headless', '--no-sandbox', '--disable-gpu', '--disable-quic', '--no-first-run', '--disable-background-networking', '--disable-component-update', '--disable-sync'],
  viewport: { width: 1280, height: 800 },
});
const page = context.pages()[0] ?? (await context.newPage());
// Generous: CI runs this beside the other test packages on two cores.
page.setDefaultTimeout(30000);
const problems = [];
page.on('console', (m) => {
  if (m.type() === 'error' || m.type() === 'warning') problems.push(`console ${m.type()}: ${m.text()} (${m.location().url})`);
});
page.on('pageerror', (e) => problems.push(`page error: ${e.message}`));
// Nothing may come from anywhere but the server: no CDN, no font service.
const origin = new URL(BASE_URL).origin;
page.on('request', (r) => {
  const u = new URL(r.url());
  if (u.origin !== origin && u.protocol !== 'data:' && u.protocol !== 'blob:') problems.push(`request to another origin: ${r.url()}`);
});

let passed = 0;
async function check(name, f) {
  const t0 = Date.now();
  try {
    await f();
    passed++;
    console.log(`ok   ${name} (${Date.now() - t0} ms)`);
  } catch (e) {
    console.log(`FAIL ${name}: ${e.stack ?? e}`);
    await page.screenshot({ path: join(ARTEFACTS, 'failure.png') }).catch(() => {});
    throw e;
  }
}
const shot = (name) => page.screenshot({ path: join(ARTEFACTS, `${name}.png`) });
const lastTurn = () => page.locator('.chat-turn').last();
// The run's own answer: the last text of the last turn (not a sub-agent's).
const answer = () => lastTurn().locator('.assistant > .run-body > .assistant-text').last();

async function runChain(id, message) {
  await page.locator(`[data-chain="${id}"] .chain-open`).click();
  await page.locator('.doc-title', { hasText: id }).waitFor();
  await page.getByRole('tab', { name: 'Run' }).click();
  await page.getByLabel('Message').fill(message);
  await page.getByLabel('Message').press('Enter');
}

try {
  await check('opens the editor and says the demo model answers', async () => {
    await page.goto(BASE_URL);
    await page.locator('[data-chain="support-agent"]').waitFor();
    const badge = page.getByTestId('demo-model');
    await badge.waitFor();
    assert.equal(await badge.textContent(), 'demo model');
    assert.match(await badge.getAttribute('title'), /OPENAI_BASE_URL/);
  });

  await check('assistant: the answer streams, marked as the demo model', async () => {
    await runChain('assistant', 'What is a rule chain?');
    const partial = await page.waitForFunction(
      () => {
        const el = [...document.querySelectorAll('.chat-turn')].at(-1)?.querySelector('.assistant > .run-body > .assistant-text');
        return el && el.textContent.length > 0 && !el.textContent.includes('LLM settings') ? el.textContent : null;
      },
      null,
      { polling: 10 },
    );
    assert.match(await partial.jsonValue(), /^\[demo model\]/);
    await answer().filter({ hasText: 'LLM settings' }).waitFor();
    assert.match(await answer().textContent(), /^\[demo model\] A scripted reply to “What is a rule chain\?”/);
    assert.match(await page.getByTestId('usage').textContent(), /tokens: [1-9]\d* in/);
  });

  await check('support-agent: the business chain is called as a tool for the chat’s user, and finds the order', async () => {
    await page.locator('[data-chain="support-agent"] .chain-open').click();
    await page.locator('.doc-title', { hasText: 'support-agent' }).waitFor();
    await page.getByRole('tab', { name: 'Run' }).click();
    // The chat runs as the example orders' owner, and says who decides that.
    const user = page.getByLabel('User id');
    assert.equal(await user.inputValue(), 'alice');
    assert.match(await page.getByTestId('chat-user-hint').textContent(), /Runs as “alice” .*caller’s word.*alice owns the example orders/);
    await page.getByLabel('Message').fill('Where is my order A-1001?');
    await page.getByLabel('Message').press('Enter');
    const card = lastTurn().locator('[data-tool-call="get_order_status"]');
    await card.waitFor();
    await answer().filter({ hasText: 'the demo model only reports what the tools said' }).waitFor();
    assert.match(await card.textContent(), /"found":\s*true/);
    assert.match(await answer().textContent(), /^\[demo model\] get_order_status answered: carrier DHL, eta 2026-11-25, found true, orderId A-1001, status shipped\./);
    await shot('support-agent');
    // Without a user the binding refuses the call: the model never
    // chooses the customer.
    await user.fill('');
    assert.match(await page.getByTestId('chat-user-hint').textContent(), /Runs without a user/);
    await page.getByLabel('Message').fill('Where is my order A-1001?');
    await page.getByLabel('Message').press('Enter');
    await answer().filter({ hasText: 'get_order_status failed' }).waitFor();
    assert.match(await lastTurn().locator('[data-tool-call="get_order_status"]').textContent(), /metadata\.userId/);
    await user.fill('alice');
    // As a message with the user in its metadata, the order is found too.
    await page.getByRole('radio', { name: 'Message (JSON)' }).click();
    const panel = page.getByTestId('message-run');
    await panel.getByLabel('Send the data as').selectOption('text');
    await panel.getByLabel('Message data').fill('Where is my order A-1001?');
    await panel.getByLabel('Metadata (JSON object)').fill('{"userId": "alice"}');
    await panel.getByRole('button', { name: 'Run', exact: true }).click();
    const result = panel.locator('.run-result').last();
    await result.getByTestId('result-data').filter({ hasText: 'get_order_status answered' }).waitFor();
    assert.match(await result.getByTestId('result-data').textContent(), /\[demo model\] get_order_status answered: carrier DHL, eta 2026-11-25, found true, orderId A-1001, status shipped\./);
    await page.locator('[data-testid="node-agent"].visited').waitFor();
    await page.getByRole('radio', { name: 'Chat (AG-UI)' }).click();
  });

  await check('orchestrator: two sub-agents run in parallel, nested in their cards', async () => {
    await runChain('orchestrator', 'Review this loop and summarise the notes: for i := 0; i < n-1; i++ {}');
    await answer().filter({ hasText: 'only reports what the tools said' }).waitFor();
    assert.match(await answer().textContent(), /^\[demo model\] 2 tool results:/);
    for (const [tool, sub] of [['Code_Reviewer', 'Code Reviewer'], ['Summarizer', 'Summarizer']]) {
      const card = lastTurn().locator(`[data-tool-call="${tool}"]`);
      assert.match(await card.locator('summary').first().textContent(), /agent/);
      await card.locator(`[data-sub-run="${sub}"] .assistant-text`, { hasText: '[demo model] A scripted reply' }).waitFor();
    }
    await shot('orchestrator');
  });

  await check('chain-guide: an MCP tool of the self server lists the chains', async () => {
    await runChain('chain-guide', 'Which chains are deployed?');
    const card = lastTurn().locator('[data-tool-call="chains__list_rule_chains"]');
    await card.waitFor();
    assert.match(await card.locator('summary').first().textContent(), /mcp/);
    await answer().filter({ hasText: 'only reports what the tools said' }).waitFor();
    assert.match(await answer().textContent(), /chains__list_rule_chains answered: chains \(\d+\) .*support-desk/);
  });

  await check('support-desk: the intent routes a refund to an agent whose call a person approves', async () => {
    // A message that fits no intent takes the fixed answer (Other).
    await runChain('support-desk', 'Tell me a joke');
    await page.locator('[data-testid="node-other"].visited').waitFor();
    await page.getByTestId('run-panel').getByRole('button', { name: 'Send', exact: true }).waitFor();
    await page.getByLabel('Message').fill('Please refund order A-1002');
    await page.getByLabel('Message').press('Enter');
    const card = page.getByTestId('interrupts');
    await card.waitFor();
    assert.match(await card.textContent(), /Approve issue_refund/);
    assert.match(await card.getByLabel('Arguments').inputValue(), /A-1002/);
    await page.locator('[data-testid="node-route"].visited').waitFor();
    await shot('approval');
    await card.getByRole('button', { name: 'Approve', exact: true }).click();
    await card.getByRole('button', { name: 'Send the answer' }).click();
    await lastTurn().getByText('issue_refund answered: orderId A-1002').waitFor();
    assert.match(await page.locator('[data-tool-call="issue_refund"]').last().textContent(), /R-1002/);
    await page.locator('[data-testid="node-refunds"].visited').waitFor();
    assert.equal(await page.locator('[data-testid="node-orders"].visited').count(), 0);
    assert.equal(await page.getByTestId('interrupts').count(), 0);
  });

  await check('the front-end tool page: the agent switches the theme and shows a card, the page runs both', async () => {
    await page.goto(`${BASE_URL}/examples/frontend-tools.html`);
    await page.locator('#demo-badge:not([hidden])').waitFor();
    assert.equal(await page.locator('body').getAttribute('data-theme'), 'light');
    await page.getByRole('button', { name: 'Switch to the dark theme' }).click();
    await page.locator('body[data-theme="dark"]').waitFor();
    await page.locator('[data-tool-call="set_theme"]', { hasText: '{"theme":"dark"} (runs in this page)' }).waitFor();
    await page.locator('[data-tool-result="set_theme"]').waitFor();
    await page.locator('#log .assistant', { hasText: '[demo model] set_theme answered: theme dark.' }).waitFor();
    await page.locator('#log[data-idle="true"]').waitFor();
    await page.getByRole('button', { name: 'Show a card titled "Hello from the agent"' }).click();
    await page.locator('#cards .card h2', { hasText: 'Hello from the agent' }).waitFor();
    await page.locator('#log .assistant', { hasText: '[demo model] show_card answered: shown Hello from the agent.' }).waitFor();
    await shot('frontend-tools');
  });

  await check('no console errors or warnings, nothing from another origin', async () => {
    assert.deepEqual(problems, []);
  });
} finally {
  await context.close();
  rmSync(profile, { recursive: true, force: true });
}
console.log(`${passed} passed, 0 failed`);
