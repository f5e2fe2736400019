// A stored run, after the fact, in the editor: the Run tab's "Recorded
// runs" opens it with its answer, its timeline (tokens, cost and time to
// first token per turn) and its steps on the canvas; a fork from its
// second LLM step with the tool result edited runs live as a new run,
// linked to the original. TestBrowserReplayAndFork (browser_test.go)
// starts `ruleagent serve --prices` (which records every run) with the
// "costly" agent: it reads a file, then answers with what it read.
// Environment: BASE_URL, CHROMIUM, ARTEFACTS.
import assert from 'node:assert/strict';
import { launch } from './harness.mjs';

const { BASE_URL, CHROMIUM, ARTEFACTS } = process.env;
for (const [k, v] of Object.entries({ BASE_URL, CHROMIUM, ARTEFACTS })) if (!v) throw new Error(`${k} is not set`);

const { page, problems, check, shot, close, passed } = await launch({ chromiumPath: CHROMIUM, artefacts: ARTEFACTS });

try {
  let runId = '';
  await check('runs the costly agent, which the server records', async () => {
    await page.goto(BASE_URL);
    await page.locator('[data-chain="costly"] .chain-open').click();
    await page.getByRole('tab', { name: 'Run' }).click();
    await page.getByLabel('Message').fill('what do my notes say?');
    await page.getByLabel('Message').press('Enter');
    await page.locator('.chat-turn').last().locator('.assistant-text', { hasText: /Your notes:[\s\S]*remember the milk/ }).waitFor();
    const list = await (await fetch(`${BASE_URL}/api/v1/records?chain=costly`)).json();
    assert.equal(list.length, 1, JSON.stringify(list));
    runId = list[0].runId;
  });

  await check('opens the recorded run after the fact: answer, timeline, cost, steps on the canvas', async () => {
    // A fresh page: nothing of the run is left but its record.
    await page.goto(BASE_URL);
    await page.locator('[data-chain="costly"] .chain-open').click();
    await page.getByRole('tab', { name: 'Run' }).click();
    await page.getByRole('radio', { name: 'Recorded runs' }).click();
    await page.locator(`.stored-item[data-run-id="${runId}"]`).click();
    const stored = page.getByTestId('stored-run');
    await stored.locator('.assistant-text', { hasText: /Your notes:[\s\S]*remember the milk/ }).waitFor();
    const details = await stored.getByTestId('turn-detail').allTextContents();
    assert.equal(details.length, 2, `turn details: ${JSON.stringify(details)}`);
    assert.match(details[0], /400 tok · 0\.00105 USD · TTFT \d+ ms/);
    assert.match(details[1], /65 tok · 0\.0002055 USD · TTFT \d+ ms/);
    assert.equal((await stored.getByTestId('cost').textContent()).trim(), '· cost 0.0012555 USD');
    await page.locator('.rule-node.visited', { hasText: 'Costly' }).waitFor();
    await shot('replay-stored-run');
  });

  await check('forks from turn 2 with the tool result edited: a live run from there, linked to the original', async () => {
    const stored = page.getByTestId('stored-run');
    await stored.getByRole('button', { name: 'Fork from turn 2' }).click();
    const form = page.getByTestId('fork-form');
    const result = form.getByLabel(/^Result of /);
    assert.match(await result.inputValue(), /remember the milk/);
    await result.fill('remember the eggs');
    await form.getByRole('button', { name: 'Fork from turn 2' }).click();
    await form.getByTestId('fork-run').locator('.assistant-text', { hasText: 'Your notes: remember the eggs' }).waitFor();
    await shot('replay-fork');
    const list = await (await fetch(`${BASE_URL}/api/v1/records?chain=costly`)).json();
    assert.equal(list.length, 2, JSON.stringify(list));
    const fork = list.find((m) => m.runId !== runId);
    assert.equal(fork.parentRunId, runId);
    assert.deepEqual(fork.forkedFrom, { runId, agent: 'costly:agent', step: 2 });
    // Its record holds both turns (the first answered from the original's
    // record), so that the fork replays on its own.
    assert.equal(fork.llmCalls, 2);
    assert.equal(fork.outcome, 'success');
  });

  await check('the original replays to the same events', async () => {
    const res = await fetch(`${BASE_URL}/api/v1/runs/${runId}/replay`, { method: 'POST', headers: { 'Content-Type': 'application/json' }, body: '{}' });
    const rep = await res.json();
    assert.equal(res.status, 200, JSON.stringify(rep));
    assert.equal(rep.same, true, JSON.stringify(rep));
  });

  assert.deepEqual(problems, [], 'console errors or warnings');
  console.log(`all ${passed()} checks passed`);
} finally {
  await close();
}
