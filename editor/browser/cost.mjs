// What a run cost, in the editor: each LLM turn on the Run panel's
// timeline shows its tokens, its cost and its time to first token, and
// the run its cost, which is the usage ledger's to the last digit.
// TestBrowserCost (browser_test.go) starts `ruleagent serve --prices` with
// a price for the scripted model and a "costly" agent that reads a file,
// then answers. Environment: BASE_URL, CHROMIUM, ARTEFACTS.
import assert from 'node:assert/strict';
import { launch } from './harness.mjs';

const { BASE_URL, CHROMIUM, ARTEFACTS } = process.env;
for (const [k, v] of Object.entries({ BASE_URL, CHROMIUM, ARTEFACTS })) if (!v) throw new Error(`${k} is not set`);

const { page, problems, check, shot, close, passed } = await launch({ chromiumPath: CHROMIUM, artefacts: ARTEFACTS });

try {
  await check('runs the costly agent in the Run panel', async () => {
    await page.goto(BASE_URL);
    await page.locator('[data-chain="costly"] .chain-open').click();
    await page.getByRole('tab', { name: 'Run' }).click();
    await page.getByLabel('Message').fill('what do my notes say?');
    await page.getByLabel('Message').press('Enter');
    await page.locator('.chat-turn').last().locator('.assistant-text', { hasText: /Your notes:[\s\S]*remember the milk/ }).waitFor();
  });

  await check('the timeline shows each turn\'s tokens, cost and time to first token', async () => {
    const details = page.getByTestId('turn-detail');
    await details.nth(1).waitFor();
    const text = await details.allTextContents();
    assert.equal(text.length, 2, `turn details: ${JSON.stringify(text)}`);
    // Turn 1: 300 in, 100 out at 1.5 and 6 a million; turn 2: 41 in, 24 out.
    assert.match(text[0], /400 tok · 0\.00105 USD · TTFT \d+ ms/);
    assert.match(text[1], /65 tok · 0\.0002055 USD · TTFT \d+ ms/);
    await shot('cost-timeline');
  });

  await check('the run\'s cost is the ledger\'s', async () => {
    const shown = (await page.getByTestId('cost').textContent()).trim();
    assert.equal(shown, '· cost 0.0012555 USD');
    const runId = await page.locator('.chat-turn').last().getAttribute('data-run-id');
    const res = await fetch(`${BASE_URL}/api/v1/usage?since=1h&run=${encodeURIComponent(runId)}`);
    const rep = await res.json();
    assert.equal(res.status, 200, JSON.stringify(rep));
    assert.equal(rep.total.cost, '0.0012555', JSON.stringify(rep.total));
    assert.equal(rep.total.calls, 2);
    assert.equal(rep.total.toolCalls, 1);
    assert.equal(rep.currency, 'USD');
  });

  assert.deepEqual(problems, [], 'console errors or warnings');
  console.log(`all ${passed()} checks passed`);
} finally {
  await close();
}
