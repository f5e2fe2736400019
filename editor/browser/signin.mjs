// The editor of a server started with --token (TestBrowserSignIn, in
// browser_test.go, starts it): the page asks for the token, keeps it for
// the tab only, never in a URL, and sends it on every request and on the
// WebSocket. Environment: BASE_URL, TOKEN, CHROMIUM, ARTEFACTS.
//
// It needs the server to serve the editor page without the token and to
// take the token on the WebSocket as the subprotocol
// "bearer.<base64url(token)>" next to "ruleagent"; a server that does not
// makes it exit with SKIP and the missing behaviour.
import assert from 'node:assert/strict';
import { launch, skip } from './harness.mjs';

const { BASE_URL, TOKEN, CHROMIUM, ARTEFACTS } = process.env;
for (const [k, v] of Object.entries({ BASE_URL, TOKEN, CHROMIUM, ARTEFACTS })) if (!v) throw new Error(`${k} is not set`);

const root = await fetch(`${BASE_URL}/`);
if (root.status === 401) skip('the server answers GET / with 401 when started with --token: it must serve the editor page without the token (the API keeps needing it)');
assert.equal(root.status, 200);
assert.equal((await fetch(`${BASE_URL}/api/v1/chains`)).status, 401, 'the API must need the token');

const { page, problems, tolerate, check, shot, close, passed } = await launch({ chromiumPath: CHROMIUM, artefacts: ARTEFACTS });
const dialog = page.getByTestId('sign-in');
const stored = () => page.evaluate(() => ({ session: sessionStorage.getItem('ruleagent.token'), local: JSON.stringify({ ...localStorage }) }));

try {
  // Until signed in, the API answers 401, which Chromium logs.
  const untolerate = tolerate((text) => text.includes('status of 401'));

  await check('opens the editor without the token, which asks for it and drops one given in the address', async () => {
    await page.goto(`${BASE_URL}/?token=${encodeURIComponent(TOKEN)}&x=1`);
    await dialog.waitFor();
    assert.equal(new URL(page.url()).search, '?x=1', 'the token stayed in the address');
    await dialog.getByText('removed from the address and not used').waitFor();
    await shot('sign-in');
    assert.equal((await stored()).session, null);
  });

  await check('refuses a wrong token', async () => {
    await dialog.getByLabel('Token').fill('wrong');
    await dialog.getByRole('button', { name: 'Sign in' }).click();
    await dialog.getByRole('alert').filter({ hasText: 'refused this token' }).waitFor();
  });

  await check('signs in: the chains load, the token is kept for the tab only', async () => {
    await dialog.getByLabel('Token').fill(TOKEN);
    await dialog.getByRole('button', { name: 'Sign in' }).click();
    await dialog.waitFor({ state: 'detached' });
    await page.locator('[data-chain="order-status"]').waitFor();
    const s = await stored();
    assert.equal(s.session, TOKEN);
    assert.ok(!s.local.includes(TOKEN), 'the token is in localStorage');
    assert.ok(!page.url().includes(encodeURIComponent(TOKEN)) && !page.url().includes(TOKEN));
  });
  untolerate();

  await check('the WebSocket takes the token as its subprotocol', async () => {
    const answered = await page.evaluate(
      ([url, token]) =>
        new Promise((resolve) => {
          const b64 = btoa(String.fromCharCode(...new TextEncoder().encode(token))).replace(/\+/g, '-').replace(/\//g, '_').replace(/=+$/, '');
          const ws = new WebSocket(url, ['ruleagent', `bearer.${b64}`]);
          ws.onopen = () => (resolve(ws.protocol), ws.close());
          ws.onerror = () => resolve(null);
        }),
      [BASE_URL.replace(/^http/, 'ws') + '/api/v1/ws', TOKEN],
    );
    if (answered === null) skip('the server refuses the WebSocket with the token as the subprotocol "bearer.<base64url(token)>" (next to "ruleagent")');
    assert.equal(answered, 'ruleagent');
  });

  await check('runs a chain with the token: its answer, and its steps from the live trace', async () => {
    await page.locator('[data-chain="order-status"] .chain-open').click();
    await page.getByRole('tab', { name: 'Run' }).click();
    const panel = page.getByTestId('message-run');
    await panel.getByLabel('Message data').fill('{"orderId": "B-2001", "userId": "bob"}');
    await panel.getByRole('button', { name: 'Run' }).click();
    const result = panel.locator('.run-result').last();
    await result.getByTestId('outcome').filter({ hasText: /^success$/ }).waitFor();
    assert.match(await result.getByTestId('result-data').textContent(), /delivered/);
    await result.getByTestId('steps').locator('li', { hasText: 'Find the order' }).waitFor();
    await page.locator('[data-testid="node-lookup"].visited').waitFor();
    await shot('signed-in');
  });

  await check('stays signed in across a reload of the tab', async () => {
    await page.reload();
    await page.locator('[data-chain="order-status"]').waitFor();
    assert.equal(await dialog.count(), 0);
  });

  await check('signs out: the token is forgotten and asked for again', async () => {
    const untolerate = tolerate((text) => text.includes('status of 401'));
    await page.getByRole('button', { name: 'Sign out' }).click();
    await dialog.waitFor();
    assert.equal((await stored()).session, null);
    untolerate();
  });

  await check('no console errors or warnings', async () => {
    assert.deepEqual(problems, []);
  });
} finally {
  await close();
}
console.log(`${passed()} passed, 0 failed`);
