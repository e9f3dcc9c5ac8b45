/**
 * The help page in a real browser (Chromium through playwright-core), against the running app:
 * the operation list, and the test form posting to the HTTP POST binding, under the strict
 * Content-Security-Policy the page is meant to be served with.
 *
 * Needs Chromium (`apt-get install -y chromium`, or CHROMIUM_PATH): test/support/chromium.ts.
 */
import { chromium, type Browser, type BrowserContext, type Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { OPERATIONS } from '../../src/contract/operations.js';
import { startApp, type StartedApp } from '../support/start-app.js';
import { CHROMIUM, CHROMIUM_ARGS, SKIP_BROWSER_TESTS } from '../support/chromium.js';


const GUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;

describe.skipIf(SKIP_BROWSER_TESTS)('help page in Chromium', () => {
  let app: StartedApp;
  let browser: Browser;
  let context: BrowserContext;
  const cspViolations: string[] = [];

  beforeAll(async () => {
    app = await startApp();
    await app.seedUser('browser-user', 'browser-pass', 2);
    browser = await chromium.launch({ executablePath: CHROMIUM, args: [...CHROMIUM_ARGS] });
    context = await browser.newContext();
    context.on('console', (msg) => {
      if (/Content Security Policy/i.test(msg.text())) cspViolations.push(msg.text());
    });
  });

  afterAll(async () => {
    await context?.close();
    await browser?.close();
    await app?.close();
  });

  /** Submits the test form; the result opens in a new tab (target=_blank, as on .NET). */
  async function invoke(page: Page): Promise<{ text: string; contentType: string | undefined }> {
    const [result, response] = await Promise.all([
      context.waitForEvent('page'),
      context.waitForEvent('response', (r) => r.request().method() === 'POST'),
      page.getByRole('button', { name: 'Invoke' }).click(),
    ]);
    await result.waitForLoadState();
    // The result is an XML document whose root element (`<boolean xmlns="SVCAPI">`...) holds the
    // value. Chromium's XML viewer adds its own nodes around the source document, so read the
    // text of the SVCAPI element rather than of the whole page.
    const text = (await result.evaluate<string | null>("document.getElementsByTagNameNS('SVCAPI', '*')[0]?.textContent ?? null")) ?? '';
    const contentType = response.headers()['content-type'];
    await result.close();
    return { text: text.trim(), contentType };
  }

  it('lists the six operations with links, and invokes ValidateUserToken through the form', async () => {
    const page = await context.newPage();
    const response = await page.goto(`${app.url}/Authentication.asmx`);
    expect(response?.status()).toBe(200);
    expect(response?.headers()['content-type']).toBe('text/html; charset=utf-8');
    await expect(page.title()).resolves.toBe('Authentication Web Service');

    const links = page.locator('#content ul li > a');
    await expect(links.allTextContents()).resolves.toEqual(OPERATIONS.map((op) => op.name));
    const hrefs = await Promise.all((await links.all()).map((a) => a.getAttribute('href')));
    expect(hrefs).toEqual(OPERATIONS.map((op) => `Authentication.asmx?op=${op.name}`));

    await page.getByRole('link', { name: 'ValidateUserToken', exact: true }).click();
    await page.waitForURL(/\?op=ValidateUserToken$/);
    await expect(page.locator('h2').textContent()).resolves.toBe('ValidateUserToken');

    await page.locator('input[name="token"]').fill('garbage');
    const result = await invoke(page);
    expect(result.contentType).toBe('text/xml; charset=utf-8');
    expect(result.text).toBe('false');
    await page.close();
  });

  it('invokes ValidateUser with seeded credentials and gets a token GUID', async () => {
    const page = await context.newPage();
    await page.goto(`${app.url}/Authentication.asmx?op=ValidateUser`);
    const inputs = await page.locator('form input[type="text"]').evaluateAll((els) => els.map((e) => e.getAttribute('name')));
    expect(inputs).toEqual(['login', 'password', 'AppId', 'IPAddress']);

    await page.locator('input[name="login"]').fill('browser-user');
    await page.locator('input[name="password"]').fill('browser-pass');
    await page.locator('input[name="AppId"]').fill('2');
    const result = await invoke(page);
    expect(result.contentType).toBe('text/xml; charset=utf-8');
    expect(result.text).toMatch(GUID);

    // The token is live: the same form flow on ValidateUserToken says true.
    await page.goto(`${app.url}/Authentication.asmx?op=ValidateUserToken`);
    await page.locator('input[name="token"]').fill(result.text);
    await expect(invoke(page)).resolves.toMatchObject({ text: 'true' });
    await page.close();
  });

  it('shows a parameterless operation with just the Invoke button', async () => {
    const page = await context.newPage();
    await page.goto(`${app.url}/Authentication.asmx?op=ValidateUserTokenJSON`);
    await expect(page.locator('form input[type="text"]').count()).resolves.toBe(0);
    await expect(page.getByRole('button', { name: 'Invoke' }).count()).resolves.toBe(1);
    await expect(page.locator('h3').allTextContents()).resolves.toEqual(['Test', 'SOAP 1.1', 'SOAP 1.2', 'HTTP GET', 'HTTP POST']);
    await page.close();
  });

  // Collected from every page the tests above opened (help pages and result tabs alike).
  it('is served with a strict Content-Security-Policy', async () => {
    const res = await fetch(`${app.url}/Authentication.asmx?op=ValidateUser`);
    expect(res.headers.get('content-security-policy')).toMatch(/^default-src 'none'; style-src 'unsafe-inline'; form-action 'self'/);
    expect(res.headers.get('x-content-type-options')).toBe('nosniff');
  });

  it('runs under the strict CSP without a single violation', () => {
    expect(cspViolations).toEqual([]);
  });
});
