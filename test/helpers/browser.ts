/**
 * A real browser for page tests: Debian's Chromium (CHROMIUM_PATH, else /usr/bin/chromium) driven by playwright-core,
 * headless, with a fresh profile and none of Chromium's own traffic (this machine's network is closed). No browser
 * is a failure, not a skip: `.ci/run` installs it (apt-get install chromium); elsewhere the message says what to
 * install. axe-core checks a page's accessibility in the page itself.
 */
import { existsSync } from 'node:fs';
import { readFile } from 'node:fs/promises';
import { createRequire } from 'node:module';
import { chromium, type Browser, type Page } from 'playwright-core';

const CANDIDATES = ['/usr/bin/chromium', '/usr/bin/chromium-browser', '/usr/bin/google-chrome'];

export function chromiumPath(): string {
  const given = process.env['CHROMIUM_PATH'];
  if (given !== undefined && given !== '') {
    if (!existsSync(given)) throw new Error(`CHROMIUM_PATH=${given}: no such file`);
    return given;
  }
  const found = CANDIDATES.find((p) => existsSync(p));
  if (found === undefined) {
    throw new Error('no Chromium for the console tests: install Debian\'s chromium (`sudo apt-get install chromium`; `bash .ci/run` does), or set CHROMIUM_PATH to a Chromium or Chrome binary');
  }
  return found;
}

export async function launchBrowser(): Promise<Browser> {
  return chromium.launch({
    executablePath: chromiumPath(),
    headless: true,
    args: ['--no-sandbox', '--disable-gpu', '--disable-quic', '--no-first-run', '--disable-background-networking', '--disable-component-update', '--disable-sync', '--disable-dev-shm-usage'],
  });
}

let axeSource: string | undefined;

export interface AxeViolation {
  id: string;
  impact: string | null;
  help: string;
  nodes: string[];
}

/**
 * axe-core's violations on the page now, of impact serious or critical. The script is evaluated through the
 * DevTools protocol, so the page's own Content-Security-Policy stays as it is.
 */
export async function seriousViolations(page: Page): Promise<AxeViolation[]> {
  axeSource ??= await readFile(createRequire(import.meta.url).resolve('axe-core/axe.min.js'), 'utf8');
  await page.evaluate(axeSource);
  const found = await page.evaluate(async () => {
    const axe = (globalThis as unknown as { axe: { run(o: unknown): Promise<{ violations: { id: string; impact: string | null; help: string; nodes: { target: unknown[] }[] }[] }> } }).axe;
    const r = await axe.run({ resultTypes: ['violations'] });
    return r.violations.map((v) => ({ id: v.id, impact: v.impact, help: v.help, nodes: v.nodes.map((n) => JSON.stringify(n.target)) }));
  });
  return found.filter((v) => v.impact === 'serious' || v.impact === 'critical');
}
