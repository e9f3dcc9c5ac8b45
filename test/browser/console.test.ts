/**
 * The admin console in a real browser (Debian's Chromium through playwright-core), with
 * JavaScript OFF: the basic flows are plain HTML forms. An admin signs in, schedules a news item,
 * finds it in the preview only for the right version and language, publishes it and a SOAP
 * WhatsNew call returns it; revokes a user's session and ValidateUserToken says false at once;
 * a form posted without its CSRF token is refused; an editor gets 403 on the users page.
 * Screenshots of every page are taken on every run; with SVCAPI_UPDATE_SCREENSHOTS=1 they replace
 * docs/console/*.png (shown in the README), otherwise they go to a temporary folder, so a test run
 * never changes the checkout.
 *
 * Needs Chromium (`apt-get install -y chromium`, or CHROMIUM_PATH): test/support/chromium.ts;
 * skipped without it.
 */
import { mkdirSync, mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { chromium, type Browser, type BrowserContext, type Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startConsoleWorld, type ConsoleWorld } from '../console/support.js';
import { CHROMIUM, CHROMIUM_ARGS, SKIP_BROWSER_TESTS } from '../support/chromium.js';

const SHOTS = process.env['SVCAPI_UPDATE_SCREENSHOTS'] === '1'
  ? fileURLToPath(new URL('../../docs/console/', import.meta.url))
  : mkdtempSync(join(tmpdir(), 'svcapi-console-shots-'));
const ADMIN_PW = 'browser admin password';
const EDITOR_PW = 'browser editor password';
const USER_PW = 'browser-user-pw-1';

const soap = async (world: ConsoleWorld, op: string, inner: string): Promise<string> => {
  const res = await fetch(world.service, {
    method: 'POST',
    headers: { 'content-type': 'text/xml; charset=utf-8', soapaction: `"SVCAPI/${op}"` },
    body: `<?xml version="1.0" encoding="utf-8"?><soap:Envelope xmlns:soap="http://schemas.xmlsoap.org/soap/envelope/"><soap:Body><${op} xmlns="SVCAPI">${inner}</${op}></soap:Body></soap:Envelope>`,
  });
  return res.text();
};
const whatsNew = (world: ConsoleWorld, version: string, language: string): Promise<string> =>
  soap(world, 'WhatsNew', `<AppToken></AppToken><AppID>2</AppID><AppVersion>${version}</AppVersion><Language>${language}</Language><qtyNews>10</qtyNews>`);

describe.skipIf(SKIP_BROWSER_TESTS)('admin console in Chromium', () => {
  let world: ConsoleWorld;
  let browser: Browser;
  let admin: BrowserContext;
  let page: Page;

  const shot = async (p: Page, name: string): Promise<void> => {
    await p.screenshot({ path: join(SHOTS, `${name}.png`), fullPage: true });
  };
  const go = async (p: Page, path: string): Promise<number> => (await p.goto(`${world.management}${path}`))?.status() ?? 0;

  beforeAll(async () => {
    mkdirSync(SHOTS, { recursive: true });
    world = await startConsoleWorld();
    await world.addAccount('ann', ADMIN_PW, 'admin');
    await world.addAccount('ed', EDITOR_PW, 'editor');
    expect((await world.admin.addUser({ login: 'browser-user', password: USER_PW, appIds: [2] })).ok).toBe(true);
    browser = await chromium.launch({ executablePath: CHROMIUM, args: [...CHROMIUM_ARGS] });
    admin = await browser.newContext({ javaScriptEnabled: false, viewport: { width: 1280, height: 800 } });
    page = await admin.newPage();
  });

  afterAll(async () => {
    await admin?.close();
    await browser?.close();
    await world?.close();
  });

  it('signs an admin in with JavaScript off', async () => {
    await go(page, '/admin/');
    expect(page.url()).toBe(`${world.management}/admin/login`);
    await page.getByLabel('Name').fill('ann');
    await page.getByLabel('Password').fill(ADMIN_PW);
    await shot(page, 'login');
    await page.getByRole('button', { name: 'Sign in' }).click();
    await expect.poll(() => page.url()).toBe(`${world.management}/admin/`);
    expect(await page.textContent('h1')).toBe('Welcome, ann');
    await shot(page, 'home');
  });

  it('schedules a news item, previews it for the right version and language only, publishes it, and WhatsNew returns it', async () => {
    const future = new Date(Date.now() + 24 * 3_600_000);
    await go(page, '/admin/news/new');
    await page.getByLabel('Application', { exact: true }).selectOption('2');
    await page.getByLabel(/^Language/).fill('de');
    await page.getByLabel('Title').fill('Neue Version 3');
    await page.getByLabel('Body').fill('Jetzt mit Karten.');
    await page.getByLabel(/^Publish at/).fill(future.toISOString().slice(0, 16));
    await page.getByLabel(/^Lowest app version/).fill('3.0');
    await shot(page, 'news-form');
    await page.getByRole('button', { name: 'Create' }).click();
    await expect.poll(() => page.url()).toContain('done=news-created');
    const row = page.locator('tr', { hasText: 'Neue Version 3' });
    expect(await row.locator('.tag').textContent()).toBe('scheduled');
    await shot(page, 'news');

    const later = new Date(future.getTime() + 60_000).toISOString().slice(0, 16);
    const preview = async (version: string, lang: string, at: string): Promise<string> => {
      await go(page, '/admin/preview');
      await page.getByLabel('AppID').selectOption('2');
      await page.getByLabel('AppVersion').fill(version);
      await page.getByLabel('Language').fill(lang);
      await page.getByLabel(/^As of/).fill(at);
      await page.getByRole('button', { name: 'Preview' }).click();
      await page.waitForSelector('#preview-rows, .flash.error');
      return (await page.locator('#preview-rows').textContent()) ?? '';
    };
    expect(await preview('3.1', 'de-AT', later)).toContain('Neue Version 3');
    await shot(page, 'preview');
    expect(await preview('2.9', 'de', later)).not.toContain('Neue Version 3');
    expect(await preview('3.1', 'fr', later)).not.toContain('Neue Version 3');
    expect(await whatsNew(world, '3.1', 'de')).not.toContain('Neue Version 3');

    await go(page, '/admin/news?app=2');
    await page.locator('tr', { hasText: 'Neue Version 3' }).getByRole('button', { name: 'Publish now' }).click();
    await expect.poll(() => page.url()).toContain('done=news-published');
    expect(await page.locator('tr', { hasText: 'Neue Version 3' }).locator('.tag').textContent()).toBe('live');
    const answer = await whatsNew(world, '3.1', 'de');
    expect(answer).toContain('<Title>Neue Version 3</Title>');
    expect(await whatsNew(world, '2.0', 'de')).not.toContain('Neue Version 3');
  });

  it('refuses a form posted without its CSRF token', async () => {
    await go(page, '/admin/news/new');
    await page.getByLabel('Title').fill('Forged');
    // The browser drops the hidden field on its way out, as a forged cross-site form would lack it.
    await page.route('**/admin/news/create', async (route) => {
      const body = new URLSearchParams(route.request().postData() ?? '');
      body.delete('csrf');
      await route.continue({ postData: body.toString() });
    });
    const [response] = await Promise.all([page.waitForResponse('**/admin/news/create'), page.getByRole('button', { name: 'Create' }).click()]);
    await page.unroute('**/admin/news/create');
    expect(response.status()).toBe(403);
    expect(await page.textContent('.flash.error')).toContain('CSRF');
    await shot(page, 'csrf-refused');
    expect((await world.store.listNews()).some((n) => n.title === 'Forged')).toBe(false);
  });

  it('revokes a user\'s session from the console, and ValidateUserToken answers false for it at once', async () => {
    const token = /<ValidateUserResult>([^<]*)<\/ValidateUserResult>/.exec(await soap(world, 'ValidateUser',
      `<login>browser-user</login><password>${USER_PW}</password><AppId>2</AppId><IPAddress>198.51.100.9</IPAddress>`))?.[1] ?? '';
    expect(token).toMatch(/^[0-9a-f-]{36}$/);
    expect(await soap(world, 'ValidateUserToken', `<token>${token}</token>`)).toContain('<ValidateUserTokenResult>true</ValidateUserTokenResult>');
    await go(page, '/admin/users');
    await page.getByLabel('Search by login').fill('browser');
    await page.getByRole('button', { name: 'Search' }).click();
    await shot(page, 'users');
    await page.getByRole('link', { name: 'browser-user' }).click();
    expect(await page.locator('#sessions tbody tr').count()).toBe(1);
    expect(await page.content()).not.toContain(token);
    await shot(page, 'user');
    await page.locator('#sessions').getByRole('button', { name: 'Revoke' }).click();
    await expect.poll(() => page.url()).toContain('done=session-revoked');
    expect(await soap(world, 'ValidateUserToken', `<token>${token}</token>`)).toContain('<ValidateUserTokenResult>false</ValidateUserTokenResult>');
    expect(await page.locator('#sessions tbody tr').count()).toBe(0);
  });

  it('shows the applications and the move dashboard', async () => {
    expect(await go(page, '/admin/apps')).toBe(200);
    await shot(page, 'apps');
    expect(await go(page, '/admin/app?id=2')).toBe(200);
    await shot(page, 'app');
    expect(await go(page, '/admin/move')).toBe(200);
    expect(await page.textContent('main')).toContain('Password hashes');
    await shot(page, 'move');
  });

  it('answers an editor 403 on the users page', async () => {
    const editor = await browser.newContext({ javaScriptEnabled: false, viewport: { width: 1280, height: 800 } });
    try {
      const p = await editor.newPage();
      await p.goto(`${world.management}/admin/login`);
      await p.getByLabel('Name').fill('ed');
      await p.getByLabel('Password').fill(EDITOR_PW);
      await p.getByRole('button', { name: 'Sign in' }).click();
      await expect.poll(() => p.url()).toBe(`${world.management}/admin/`);
      expect((await p.goto(`${world.management}/admin/users`))?.status()).toBe(403);
      await shot(p, 'editor-403');
      expect((await p.goto(`${world.management}/admin/news`))?.status()).toBe(200);
    } finally {
      await editor.close();
    }
  });
});
