// A page reloaded while a run streams: the Run tab opens again on the chat
// the tab was in and shows the whole run, what was sent before the reload
// and what came after, once, in order, until the run's end; a second
// reload, after the end, shows it again whole. TestBrowserRejoin
// (browser_test.go) starts `ruleagent serve` with a "storyteller" agent
// that answers STORY slowly. Environment: BASE_URL, STORY, CHROMIUM,
// ARTEFACTS.
import assert from 'node:assert/strict';
import { launch } from './harness.mjs';

const { BASE_URL, STORY, CHROMIUM, ARTEFACTS } = process.env;
for (const [k, v] of Object.entries({ BASE_URL, STORY, CHROMIUM, ARTEFACTS })) if (!v) throw new Error(`${k} is not set`);

const { page, problems, check, shot, close, passed } = await launch({ chromiumPath: CHROMIUM, artefacts: ARTEFACTS });

const turn = () => page.locator('.chat-turn').last();
let runId;

try {
  await check('starts a run in the Run panel', async () => {
    await page.goto(BASE_URL);
    await page.locator('[data-chain="storyteller"] .chain-open').click();
    await page.getByRole('tab', { name: 'Run' }).click();
    await page.getByLabel('Message').fill('tell me a story');
    await page.getByLabel('Message').press('Enter');
    await turn().locator('.assistant-text', { hasText: 'Once upon' }).waitFor();
    runId = await turn().getAttribute('data-run-id');
    const text = await turn().locator('.assistant-text').textContent();
    assert.ok(text.length < STORY.length, 'the run should still be going');
  });

  await check('after a reload, the chat opens again and the run goes on live to its end', async () => {
    await page.reload();
    await page.locator(`.chat-turn[data-run-id="${runId}"]`).waitFor();
    assert.equal(await turn().locator('.user-text').textContent(), 'tell me a story');
    // The Stop button says the run is followed live.
    await page.getByRole('button', { name: 'Stop' }).waitFor();
    await turn().locator('.assistant.run-finished').waitFor();
    assert.equal(await turn().locator('.assistant-text').textContent(), STORY);
    await shot('rejoin-after-reload');
  });

  await check('a reload after the end shows the whole run again', async () => {
    await page.reload();
    await page.locator(`.chat-turn[data-run-id="${runId}"] .assistant.run-finished`).waitFor();
    assert.equal(await turn().locator('.assistant-text').textContent(), STORY);
    assert.equal(await page.locator('.chat-turn').count(), 1);
  });

  await check('New thread forgets the chat: a reload shows none', async () => {
    await page.getByRole('button', { name: 'New thread' }).click();
    await page.reload();
    await page.locator('[data-chain="storyteller"]').waitFor();
    await page.waitForTimeout(500);
    assert.equal(await page.locator('.chat-turn').count(), 0);
  });

  assert.deepEqual(problems, [], 'console errors or warnings');
  console.log(`all ${passed()} checks passed`);
} finally {
  await close();
}
