// What the browser tests share: headless Debian Chromium on a fresh profile
// (through playwright-core), named checks that stop at the first failure
// with a screenshot, and the console errors and warnings the page logged.
import { chromium } from 'playwright-core';
import { mkdtempSync, mkdirSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

export async function launch({ chromiumPath, artefacts }) {
  mkdirSync(artefacts, { recursive: true });
  const profile = mkdtempSync(join(tmpdir(), 'ruleagent-chromium-'));
  // A fresh profile (--user-data-dir, which playwright takes as an argument).
  const context = await chromium.launchPersistentContext(profile, {
    executablePath: chromiumPath,
    headless: true,
    args: ['--headless', '--no-sandbox', '--disable-gpu', '--disable-quic', '--no-first-run', '--disable-background-networking', '--disable-component-update', '--disable-sync'],
    viewport: { width: 1280, height: 800 },
    acceptDownloads: true,
  });
  const page = context.pages()[0] ?? (await context.newPage());
  // Generous: CI runs these beside the other test packages on two cores.
  page.setDefaultTimeout(30000);
  const problems = [];
  // expected holds predicates of console messages a test provokes on
  // purpose (a refused deploy, a refused token); each matches once.
  const expected = [];
  // tolerated holds predicates of messages expected any number of times
  // while a test step provokes them.
  const tolerated = new Set();
  const tolerate = (f) => (tolerated.add(f), () => tolerated.delete(f));
  page.on('console', (m) => {
    if (m.type() !== 'error' && m.type() !== 'warning') return;
    if ([...tolerated].some((f) => f(m.text(), m.location().url))) return;
    const i = expected.findIndex((f) => f(m.text(), m.location().url));
    if (i >= 0) {
      expected.splice(i, 1);
      return;
    }
    problems.push(`console ${m.type()}: ${m.text()} (${m.location().url})`);
  });
  page.on('pageerror', (e) => problems.push(`page error: ${e.message}`));

  let passed = 0;
  const shot = (name) => page.screenshot({ path: join(artefacts, `${name}.png`) });
  async function check(name, f) {
    const t0 = Date.now();
    try {
      await f();
      passed++;
      console.log(`ok   ${name} (${Date.now() - t0} ms)`);
    } catch (e) {
      console.log(`FAIL ${name}: ${e.stack ?? e}`);
      await page.screenshot({ path: join(artefacts, 'failure.png') }).catch(() => {});
      throw e;
    }
  }
  async function close() {
    await context.close();
    rmSync(profile, { recursive: true, force: true });
  }
  return { context, page, problems, expected, tolerate, check, shot, close, passed: () => passed };
}

// skip ends a test whose server lacks a behaviour it needs: the Go test
// reads the line and the exit status and skips with the reason.
export const SKIP_STATUS = 3;
export function skip(reason) {
  console.log(`SKIP ${reason}`);
  process.exit(SKIP_STATUS);
}
