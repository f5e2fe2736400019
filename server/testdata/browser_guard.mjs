// Attacks of a web page on a local `ruleagent serve`, run in headless
// Debian Chromium (playwright-core, from the editor's npm packages) by
// TestBrowserRefusesCrossSiteAttacks (guard_browser_test.go):
//   VICTIM      the server, http://127.0.0.1:PORT
//   CHROMIUM    the browser
//   EDITOR_DIR  the editor folder, whose node_modules hold playwright-core
// It prints one JSON report on its last line: what each request of each
// page got from the server (as the browser's network layer saw it, since
// a page cannot read a cross-origin answer), and what the pages saw.
import { createRequire } from 'node:module';
import { createServer } from 'node:http';
import { join } from 'node:path';

const { VICTIM, CHROMIUM, EDITOR_DIR } = process.env;
for (const [k, v] of Object.entries({ VICTIM, CHROMIUM, EDITOR_DIR })) if (!v) throw new Error(`${k} is not set`);
const { chromium } = createRequire(join(EDITOR_DIR, 'package.json'))('playwright-core');
const victim = new URL(VICTIM);

// The chain a page would deploy: bash with the sandbox off.
const pwned = JSON.stringify({
  ruleChain: { id: 'pwned', name: 'Pwned' },
  metadata: { nodes: [{ id: 'agent', type: 'ai/agent', name: 'A', configuration: { systemPrompt: 'pwned',
    tools: [{ type: 'builtin', name: 'bash', config: { sandbox: 'off' } }] } }], connections: [] },
});

// The page of another origin (a second loopback port): every way a page
// may send a request without the server's consent (no CORS preflight), and
// two that need it.
const crossSitePage = `<!doctype html><meta charset="utf-8"><title>attacker</title>
<iframe name="sink1"></iframe><iframe name="sink2"></iframe>
<form id="plain" method="post" enctype="text/plain" target="sink1" action="${VICTIM}/api/v1/chains/chat/run">
  <input name='{"input":"pwned by a text/plain form","x":"' value='"}'></form>
<form id="urlenc" method="post" target="sink2" action="${VICTIM}/v1/chat/completions">
  <input name="model" value="chat"><input name="messages" value="pwned by a urlencoded form"></form>
<script>
const V = ${JSON.stringify(VICTIM)};
const run = JSON.stringify({ input: 'pwned by fetch' });
const outcome = (p) => p.then(() => 'resolved', (e) => 'rejected: ' + e.name);
window.attack = async () => {
  const r = {};
  r.noCorsText = await outcome(fetch(V + '/api/v1/chains/chat/run', { method: 'POST', mode: 'no-cors', body: run }));
  r.noCorsBlob = await outcome(fetch(V + '/api/v1/chains/chat/agui', { method: 'POST', mode: 'no-cors',
    body: new Blob([JSON.stringify({ messages: [{ id: 'm', role: 'user', content: 'pwned by a typeless fetch' }] })]) }));
  r.noCorsChat = await outcome(fetch(V + '/v1/chat/completions', { method: 'POST', mode: 'no-cors',
    headers: { 'Content-Type': 'text/plain' }, body: JSON.stringify({ model: 'chat', messages: [{ role: 'user', content: 'pwned by fetch' }] }) }));
  // Needs a preflight, which the server does not grant this origin.
  r.corsJSON = await outcome(fetch(V + '/api/v1/chains/chat/run', { method: 'POST', headers: { 'Content-Type': 'application/json' }, body: run }));
  r.corsPut = await outcome(fetch(V + '/api/v1/chains/pwned', { method: 'PUT', headers: { 'Content-Type': 'application/json' }, body: ${JSON.stringify(pwned)} }));
  r.webSocket = await new Promise((done) => {
    const ws = new WebSocket(V.replace('http', 'ws') + '/api/v1/ws');
    ws.onopen = () => { ws.close(); done('opened'); };
    ws.onerror = () => done('error');
  });
  for (const id of ['plain', 'urlenc']) {
    const frame = document.querySelector('iframe[name="' + document.getElementById(id).target + '"]');
    await new Promise((done) => { frame.onload = done; document.getElementById(id).submit(); });
  }
  return r;
};
</script>`;

// The page of a rebound name: rebound.test resolves to 127.0.0.1 (Chromium's
// host resolver rules), and its first document came from the attacker (a
// routed response), so its later same-origin requests reach the server
// with Host rebound.test:PORT and can read the answers.
const reboundPage = `<!doctype html><meta charset="utf-8"><title>rebound</title><script>
window.attack = async () => {
  const r = {};
  const call = async (method, path, body) => {
    try {
      const res = await fetch(path, { method, headers: body ? { 'Content-Type': 'application/json' } : {}, body });
      return { status: res.status, body: (await res.text()).slice(0, 400) };
    } catch (e) {
      return { status: 0, body: String(e) };
    }
  };
  r.list = await call('GET', '/api/v1/chains');
  r.deploy = await call('PUT', '/api/v1/chains/pwned', ${JSON.stringify(pwned)});
  r.run = await call('POST', '/api/v1/chains/chat/run', JSON.stringify({ input: 'pwned by a rebound page' }));
  r.chat = await call('POST', '/v1/chat/completions', JSON.stringify({ model: 'chat', messages: [{ role: 'user', content: 'pwned by a rebound page' }] }));
  r.webSocket = await new Promise((done) => {
    const ws = new WebSocket('ws://' + location.host + '/api/v1/ws');
    ws.onopen = () => { ws.close(); done('opened'); };
    ws.onerror = () => done('error');
  });
  return r;
};
</script>`;

const attacker = createServer((req, res) => {
  res.writeHead(200, { 'Content-Type': 'text/html; charset=utf-8' });
  res.end(crossSitePage);
});
await new Promise((done) => attacker.listen(0, '127.0.0.1', done));
const attackerURL = `http://127.0.0.1:${attacker.address().port}/`;

const browser = await chromium.launch({
  executablePath: CHROMIUM,
  headless: true,
  args: ['--no-sandbox', '--disable-gpu', '--disable-quic', '--no-first-run', '--disable-background-networking',
    '--disable-component-update', '--disable-sync', `--host-resolver-rules=MAP rebound.test 127.0.0.1`,
    // Chromium's private network checks would stop the rebound page's
    // requests before they reach the server; other browsers have none, and
    // the server must hold on its own.
    '--disable-features=PrivateNetworkAccessSendPreflights,PrivateNetworkAccessRespectPreflightResults,BlockInsecurePrivateNetworkRequests,LocalNetworkAccessChecks'],
});
const report = {};
try {
  // What the server answered each request to it, seen by the network layer.
  const record = (page, into) => {
    page.on('response', async (res) => {
      const u = new URL(res.url());
      if (u.port !== victim.port) return;
      let body = '';
      try { body = (await res.text()).slice(0, 300); } catch { /* opaque or aborted */ }
      into.push({ method: res.request().method(), path: u.pathname, status: res.status(), body });
    });
    page.on('requestfailed', (req) => {
      const u = new URL(req.url());
      if (u.port === victim.port) into.push({ method: req.method(), path: u.pathname, status: 0, body: req.failure()?.errorText ?? '' });
    });
  };

  const cross = await browser.newPage();
  report.crossSite = { network: [] };
  record(cross, report.crossSite.network);
  await cross.goto(attackerURL);
  report.crossSite.page = await cross.evaluate(() => window.attack());

  const rebound = await browser.newPage();
  const reboundURL = `http://rebound.test:${victim.port}/attack`;
  await rebound.route(reboundURL, (route) => route.fulfill({ status: 200, contentType: 'text/html', body: reboundPage }));
  report.rebound = { network: [] };
  record(rebound, report.rebound.network);
  await rebound.goto(reboundURL);
  report.rebound.page = await rebound.evaluate(() => window.attack());

  // Control: the server's own origin (the editor's page) may start a run,
  // so the refusals above are the server's doing, not the harness's.
  const own = await browser.newPage();
  await own.goto(VICTIM + '/');
  report.sameOrigin = await own.evaluate(async () => {
    const res = await fetch('/api/v1/chains/chat/run', { method: 'POST', headers: { 'Content-Type': 'application/json' },
      body: JSON.stringify({ input: 'hello from the same origin' }) });
    return { status: res.status, body: (await res.text()).slice(0, 300) };
  });
  // Give the network layer's last response events time to arrive.
  await new Promise((done) => setTimeout(done, 300));
} finally {
  await browser.close();
  attacker.close();
}
console.log(JSON.stringify(report));
