/**
 * The admin console through the management listener with plain HTTP requests: sign-in,
 * cookies, CSRF, roles, fixation, logout, throttling, escaping, sessions of users, the news
 * preview, and that no secret is ever rendered or logged.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createHash } from 'node:crypto';
import { DEFAULT_COMPAT_PROFILE } from '../../src/contract/compat-profile.js';
import { loginThrottleKey } from '../../src/domain/login-throttle.js';
import { ConsoleClient, startConsoleWorld, type ConsoleWorld } from './support.js';

let world: ConsoleWorld;
const ADMIN_PW = 'correct horse battery 1';
const EDITOR_PW = 'editor password 12345';

beforeAll(async () => {
  world = await startConsoleWorld();
  await world.addAccount('ann', ADMIN_PW, 'admin');
  await world.addAccount('ed', EDITOR_PW, 'editor');
});
afterAll(async () => {
  await world?.close();
});

const signedIn = async (name = 'ann', password = ADMIN_PW): Promise<ConsoleClient> => {
  const client = new ConsoleClient(world.management);
  const res = await client.login(name, password);
  expect(res.status).toBe(303);
  return client;
};

const soap = (op: string, fields: Record<string, string>): Promise<string> =>
  fetch(`${world.service}/${op}`, { method: 'POST', headers: { 'content-type': 'application/x-www-form-urlencoded' }, body: new URLSearchParams(fields).toString() }).then((r) => r.text());
const tokenOf = (xml: string): string => /<string xmlns="SVCAPI">([^<]*)<\/string>/.exec(xml)?.[1] ?? '';

describe('admin console over HTTP', () => {
  it('is served on the management listener only, never on the public port', async () => {
    const publicRes = await fetch(`${new URL(world.service).origin}/admin/login`);
    expect(publicRes.status).toBe(404);
    expect(await publicRes.text()).not.toContain('Sign in');
    const res = await fetch(`${world.management}/admin/login`);
    expect(res.status).toBe(200);
    expect(await res.text()).toContain('Sign in');
  });

  it('sends the security headers and its own stylesheet', async () => {
    const res = await fetch(`${world.management}/admin/login`);
    expect(res.headers.get('content-security-policy')).toBe("default-src 'none'; style-src 'self'; form-action 'self'; frame-ancestors 'none'; base-uri 'none'");
    expect(res.headers.get('x-content-type-options')).toBe('nosniff');
    expect(res.headers.get('cache-control')).toBe('no-store');
    const page = await res.text();
    expect(page).not.toMatch(/<script|style=|https?:\/\/(?!www\.w3)/i);
    const css = await fetch(`${world.management}/admin/console.css`);
    expect(css.status).toBe(200);
    expect(css.headers.get('content-type')).toMatch(/^text\/css/);
  });

  it('signs in with a session cookie that is HttpOnly, SameSite=Strict, Path=/admin/, and not Secure over plain HTTP', async () => {
    const client = new ConsoleClient(world.management);
    const res = await client.login('ann', ADMIN_PW);
    expect(res.status).toBe(303);
    expect(res.headers.get('location')).toBe('/admin/');
    const cookie = res.headers.getSetCookie().find((c) => c.startsWith('svcapi_console='));
    expect(cookie).toBeDefined();
    expect(cookie).toMatch(/HttpOnly/i);
    expect(cookie).toMatch(/SameSite=Strict/i);
    expect(cookie).toMatch(/Path=\/admin\//);
    expect(cookie).not.toMatch(/Secure/i);
    expect(await client.text('/admin/')).toContain('Welcome, ann');
  });

  it('sends anybody without a session to the sign-in page, and refuses their POSTs', async () => {
    const res = await fetch(`${world.management}/admin/news`, { redirect: 'manual' });
    expect(res.status).toBe(303);
    expect(res.headers.get('location')).toBe('/admin/login');
    const post = await fetch(`${world.management}/admin/news/create`, { method: 'POST', headers: { 'content-type': 'application/x-www-form-urlencoded' }, body: 'title=x', redirect: 'manual' });
    expect(post.status).toBe(401);
  });

  it('answers a form of another type 415 and one over 64 KiB 413, as pages, not as failures', async () => {
    const client = await signedIn();
    const csrf = await client.csrf();
    const typed = await client.request('/admin/news/create', { method: 'POST', headers: { 'content-type': 'text/plain' } });
    expect(typed.status).toBe(415);
    expect(await typed.text()).toContain('application/x-www-form-urlencoded');
    const big = await client.request('/admin/news/create', { form: { csrf, title: 'x'.repeat(70 * 1024) } });
    expect(big.status).toBe(413);
    expect(world.logs()).not.toMatch(/"level":50/);
  });

  it('refuses a sign-in form without its CSRF token', async () => {
    const client = new ConsoleClient(world.management);
    await client.text('/admin/login');
    const res = await client.request('/admin/login', { form: { name: 'ann', password: ADMIN_PW } });
    expect(res.status).toBe(403);
    expect(res.headers.getSetCookie().some((c) => c.startsWith('svcapi_console='))).toBe(false);
  });

  it('makes a new session id at every sign-in, ignoring one planted before (no fixation)', async () => {
    const client = new ConsoleClient(world.management);
    const planted = 'A'.repeat(43);
    client.cookies.set('svcapi_console', planted);
    await client.login('ann', ADMIN_PW);
    const first = client.cookies.get('svcapi_console');
    expect(first).toBeDefined();
    expect(first).not.toBe(planted);
    const victim = new ConsoleClient(world.management);
    victim.cookies.set('svcapi_console', planted);
    expect((await victim.request('/admin/')).status).toBe(303);
    await client.login('ann', ADMIN_PW);
    expect(client.cookies.get('svcapi_console')).not.toBe(first);
  });

  it('refuses every change posted without the session\'s CSRF token, or with another session\'s', async () => {
    const client = await signedIn();
    const other = await signedIn();
    const fields = { app: '2', title: 'No CSRF', body: 'b', language: 'en' };
    const none = await client.request('/admin/news/create', { form: fields });
    expect(none.status).toBe(403);
    expect(await none.text()).toContain('CSRF');
    const foreign = await client.post('/admin/news/create', fields, await other.csrf());
    expect(foreign.status).toBe(403);
    const fromElsewhere = await client.request('/admin/news/create', { form: { ...fields, csrf: await client.csrf() }, headers: { origin: 'https://evil.example' } });
    expect(fromElsewhere.status).toBe(403);
    expect((await world.store.listNews()).some((n) => n.title === 'No CSRF')).toBe(false);
    const good = await client.request('/admin/news/create', { form: { ...fields, csrf: await client.csrf() }, headers: { origin: world.management } });
    expect(good.status).toBe(303);
  });

  it('shows the last differences shadowing kept on the move page, escaped, to admins only', async () => {
    await world.store.insertShadowDifference({
      at: new Date('2026-11-25T10:00:00Z'), mode: 'front', operation: 'ValidateUserJSON', binding: 'http-get',
      requestJson: '{}', legacyJson: '{}', oursJson: '{}',
      diff: '-<string>{"Success":false}</string>\n+<string>{"success":false,"<script>x</script>":""}</string>',
    }, 10);
    const client = await signedIn();
    const page = await client.text('/admin/move');
    expect(page).toContain('Last differences on live traffic (1)');
    expect(page).toContain('ValidateUserJSON');
    expect(page).toContain('&lt;script&gt;x&lt;/script&gt;');
    expect(page).not.toContain('<script>x</script>');
  });

  it('shows token passthrough\'s counts of every instance and the last vouched-for legacy token on the move page', async () => {
    const client = await signedIn();
    expect(await client.text('/admin/move')).toContain('Last vouched-for legacy token: <strong>never</strong>');
    const now = Date.now();
    const day = (ms: number): string => new Date(ms).toISOString().slice(0, 10);
    await world.store.addLegacyTallies([
      { day: day(now), kind: 'check', result: 'valid', count: 3, lastAt: new Date(now) },
      { day: day(now - 10 * 86_400_000), kind: 'check', result: 'valid', count: 4, lastAt: new Date(now - 10 * 86_400_000) },
      { day: day(now), kind: 'adoption', result: 'adopted', count: 2, lastAt: new Date(now) },
    ], day(now - 90 * 86_400_000));
    const page = await client.text('/admin/move');
    expect(page).toContain(`Last vouched-for legacy token: <strong>${new Date(now).toISOString().slice(0, 19).replace('T', ' ')} UTC (0 days ago)</strong>`);
    expect(page).toContain('<tr><td>check</td><td>valid</td><td class="num">3</td><td class="num">7</td></tr>');
    expect(page).toContain('<tr><td>adoption</td><td>adopted</td><td class="num">2</td><td class="num">2</td></tr>');
    expect(page).not.toContain('<td>cached_invalid</td>'); // nothing counted: not listed
  });

  it('lets an editor manage news but answers 403 on the users, applications and move pages', async () => {
    const editor = await signedIn('ed', EDITOR_PW);
    expect((await editor.request('/admin/news')).status).toBe(200);
    expect((await editor.request('/admin/preview')).status).toBe(200);
    for (const path of ['/admin/users', '/admin/user?login=x', '/admin/apps', '/admin/app?id=2', '/admin/move']) {
      expect((await editor.request(path)).status, path).toBe(403);
    }
    const res = await editor.post('/admin/users/create', { login: 'sneaky', password: 'pw-1234567', confirm: 'pw-1234567', app: '2' });
    expect(res.status).toBe(403);
    expect((await world.admin.getUser('sneaky')).ok).toBe(false);
    const home = await editor.text('/admin/');
    expect(home).not.toContain('href="/admin/users"');
  });

  it('ends the session at logout: the old cookie no longer opens anything', async () => {
    const client = await signedIn();
    const cookie = client.cookies.get('svcapi_console') ?? '';
    const res = await client.post('/admin/logout', {});
    expect(res.status).toBe(303);
    expect(res.headers.getSetCookie().some((c) => /^svcapi_console=;/.test(c))).toBe(true);
    const replay = new ConsoleClient(world.management);
    replay.cookies.set('svcapi_console', cookie);
    expect((await replay.request('/admin/')).status).toBe(303);
  });

  it('throttles wrong admin passwords: after the pair\'s limit even the right password is refused for a while', async () => {
    await world.addAccount('victim', 'victim password 123', 'editor');
    const client = new ConsoleClient(world.management);
    for (let i = 0; i < 3; i += 1) expect((await client.login('victim', `wrong password ${i}`)).status).toBe(401);
    const res = await client.login('victim', 'victim password 123');
    expect(res.status).toBe(401);
    expect(res.headers.getSetCookie().some((c) => c.startsWith('svcapi_console='))).toBe(false);
    // A service user of the same name is not throttled by it: the console's counters are its own.
    expect((await world.store.loginThrottleState({ loginHash: loginThrottleKey('victim'), now: new Date(), knownSince: new Date(0), limit: 5 })).pairCount).toBe(0);
  });

  it('shows a title and a login holding <script> as text', async () => {
    const client = await signedIn();
    const title = '<script>alert("t")</script>';
    expect((await client.post('/admin/news/create', { app: '2', title, body: '<b>x</b>', language: 'en' })).status).toBe(303);
    const list = await client.text('/admin/news?app=2');
    expect(list).not.toContain(title);
    expect(list).toContain('&lt;script&gt;alert(&quot;t&quot;)&lt;/script&gt;');
    const preview = await client.text('/admin/preview?app=2&lang=en&qty=50');
    expect(preview).not.toContain('<script>');
    expect(preview).not.toContain('<b>x</b>');
    const login = '<script>u</script>';
    const created = await world.admin.addUser({ login, password: 'pw-123456789', appIds: [2] });
    expect(created.ok).toBe(true);
    const users = await client.text('/admin/users');
    expect(users).not.toContain(login);
    expect(users).toContain('&lt;script&gt;u&lt;/script&gt;');
  });

  it('previews exactly what WhatsNew returns for an application, version, language and time, with the DataTable XML', async () => {
    const client = await signedIn();
    const future = new Date(Date.now() + 3_600_000);
    const at = future.toISOString().slice(0, 16);
    const res = await client.post('/admin/news/create', { app: '2', title: 'Scheduled v3 de', body: 'b', language: 'de', minVersion: '3.0', publishedAt: at });
    expect(res.status).toBe(303);
    const later = new Date(future.getTime() + 60_000).toISOString().slice(0, 16);
    const page = async (q: string): Promise<string> => client.text(`/admin/preview?${q}`);
    expect(await page(`app=2&version=3.1&lang=de&qty=10&at=${later}`)).toContain('Scheduled v3 de');
    expect(await page(`app=2&version=2.9&lang=de&qty=10&at=${later}`)).not.toContain('Scheduled v3 de');
    expect(await page(`app=2&version=3.1&lang=fr&qty=10&at=${later}`)).not.toContain('Scheduled v3 de');
    expect(await page('app=2&version=3.1&lang=de&qty=10')).not.toContain('Scheduled v3 de'); // not yet
    const xml = await page(`app=2&version=3.1&lang=de&qty=10&at=${later}`);
    expect(xml).toContain('&lt;xs:schema id=&quot;NewDataSet&quot;');
    expect(xml).toContain('&lt;Title&gt;Scheduled v3 de&lt;/Title&gt;');
  });

  it('lists a user\'s live sessions by fingerprint, never the token, and revokes one at once', async () => {
    const password = 'user secret pw 42';
    expect((await world.admin.addUser({ login: 'carol', password, appIds: [2] })).ok).toBe(true);
    const token1 = tokenOf(await soap('ValidateUser', { Login: 'carol', Password: password, AppId: '2', IPAddress: '' }));
    const token2 = tokenOf(await soap('ValidateUser', { Login: 'carol', Password: password, AppId: '2', IPAddress: '' }));
    expect(token1).toMatch(/^[0-9a-f-]{36}$/);
    const client = await signedIn();
    const page = await client.text('/admin/user?login=carol');
    expect(page).not.toContain(token1);
    expect(page).not.toContain(token2);
    const fp = createHash('sha256').update(token1).digest('hex').slice(0, 12);
    expect(page).toContain(fp);
    // Where each came from: ours (ValidateUser here) or legacy (`import tokens` from the old service).
    const carol = await world.admin.getUser('carol');
    const legacyHash = createHash('sha256').update('6ba7b810-9dad-11d1-80b4-00c04fd430c8').digest('hex');
    expect(carol.ok && await world.store.importToken({
      tokenHash: legacyHash, kind: 'session', userId: carol.value.userId, appId: 2, clientIp: null, sourceIp: null,
      issuedAt: new Date(), expiresAt: new Date(Date.now() + 3_600_000), lastUsedAt: new Date(), usedAt: null, revokedAt: null, origin: 'legacy',
    })).toBe(true);
    const rows = (await client.text('/admin/user?login=carol')).match(/<tr><td class="mono">[0-9a-f]{12}<\/td>.*?<\/tr>/gs) ?? [];
    const originOf = (id: string): string | undefined => rows.find((r) => r.includes(`>${id}<`))?.match(/<td class="origin">(\w+)<\/td>/)?.[1];
    expect(rows).toHaveLength(3);
    expect(originOf(fp)).toBe('ours');
    expect(originOf(legacyHash.slice(0, 12))).toBe('legacy');
    const res = await client.post('/admin/user/revoke-session', { login: 'carol', id: fp });
    expect(res.status).toBe(303);
    expect(await soap('ValidateUserToken', { Token: token1 })).toContain('>false<');
    expect(await soap('ValidateUserToken', { Token: token2 })).toContain('>true<');
    await world.flushAudit();
    const events = await world.store.queryAudit({ type: 'admin.token.revoke', limit: 5 });
    expect(events.some((e) => e.tokenFp === fp && (e.detail as { actor?: string } | null)?.actor === 'console:ann')).toBe(true);
  });

  it('never renders nor logs a password, a token or a session cookie', async () => {
    const password = 'unique-canary-password-7731';
    const client = await signedIn();
    const created = await client.post('/admin/users/create', { login: 'dave', password, confirm: password, app: '2' });
    expect(created.status).toBe(303);
    const token = tokenOf(await soap('ValidateUser', { Login: 'dave', Password: password, AppId: '2', IPAddress: '' }));
    expect(token).not.toBe('');
    const newPassword = 'unique-canary-password-8842';
    expect((await client.post('/admin/user/password', { login: 'dave', password: newPassword, confirm: newPassword })).status).toBe(303);
    const bad = await client.post('/admin/user/password', { login: 'dave', password: 'unique-canary-mismatch-1', confirm: 'unique-canary-mismatch-2' });
    expect(bad.status).toBe(400);
    const badPage = await bad.text();
    const pages = [badPage, ...await Promise.all(['/admin/user?login=dave', '/admin/users', '/admin/news', '/admin/move'].map((p) => client.text(p)))].join('\n');
    const cookie = client.cookies.get('svcapi_console') ?? '';
    const failed = new ConsoleClient(world.management);
    await failed.login('ann', 'unique-canary-admin-wrong');
    await world.flushAudit();
    const logs = world.logs();
    const trail = JSON.stringify(await world.store.queryAudit({ limit: 1000 }));
    for (const secret of [password, newPassword, 'unique-canary-mismatch', token, cookie, ADMIN_PW, 'unique-canary-admin-wrong']) {
      expect(pages, 'pages').not.toContain(secret);
      expect(logs, 'logs').not.toContain(secret);
      expect(trail, 'audit trail').not.toContain(secret);
    }
    expect(logs).toContain('console.login.failure');
  });

  it('edits an application through AdminService.updateApplication and shows refusals as messages', async () => {
    const client = await signedIn();
    const ok = await client.post('/admin/app/update', {
      id: '2', name: 'GPS', enabled: 'on', loginUrl: 'https://gps.example/login', tokenLifetimeSeconds: '7200', idleTimeoutSeconds: '', defaultLanguage: 'en', trustedCallers: '10.0.0.0/8',
    });
    expect(ok.status).toBe(303);
    const app = await world.store.getApplication(2);
    expect(app).toMatchObject({ loginUrl: 'https://gps.example/login', tokenLifetimeSeconds: 7200, requireIp: false, trustedCallers: ['10.0.0.0/8'] });
    const bad = await client.post('/admin/app/update', { id: '2', name: 'GPS', enabled: 'on', tokenLifetimeSeconds: '7200', defaultLanguage: 'en', trustedCallers: '0.0.0.0/0' });
    expect(bad.status).toBe(400);
    expect(await bad.text()).toContain('must not cover every address');
  });
});

describe('news attributes in the console', () => {
  let other: ConsoleWorld;
  beforeAll(async () => {
    // A profile whose WhatsNew table shows an attribute as a column, as a legacy table had it.
    other = await startConsoleWorld({
      newsTable: { ...DEFAULT_COMPAT_PROFILE.whatsNew, columns: [...DEFAULT_COMPAT_PROFILE.whatsNew.columns, { name: 'Priority', type: 'int', from: { attribute: 'priority' } }] },
    });
    await other.addAccount('ann', ADMIN_PW, 'admin');
  });
  afterAll(async () => {
    await other?.close();
  });

  it('creates and edits attributes, refuses malformed ones, and the preview shows them in the profile\'s table', async () => {
    const client = new ConsoleClient(other.management);
    expect((await client.login('ann', ADMIN_PW)).status).toBe(303);
    expect(await client.text('/admin/news/new')).toContain('<code>priority</code> as column Priority');
    const bad = await client.post('/admin/news/create', { app: '2', title: 'Attr', body: 'b', language: 'en', attributes: 'no equals sign' });
    expect(bad.status).toBe(400);
    expect(await bad.text()).toContain('name=value');
    const badName = await client.post('/admin/news/create', { app: '2', title: 'Attr', body: 'b', language: 'en', attributes: 'bad name=1' });
    expect(badName.status).toBe(400);
    expect((await client.post('/admin/news/create', { app: '2', title: 'Attr', body: 'b', language: 'en', attributes: 'priority=7\r\nnote=a=b' })).status).toBe(303);
    const [item] = await other.store.listNews();
    expect(item?.attributes).toEqual({ note: 'a=b', priority: '7' });
    const edit = await client.text(`/admin/news/edit?id=${item?.newsId ?? 0}`);
    expect(edit).toContain('note=a=b\npriority=7</textarea>');
    expect((await client.post('/admin/news/update', { id: String(item?.newsId), title: 'Attr', body: 'b', language: 'en', attributes: 'priority=9' })).status).toBe(303);
    expect((await other.store.getNews(item?.newsId ?? 0))?.attributes).toEqual({ priority: '9' });
    const preview = await client.text('/admin/preview?app=2&lang=en&qty=10');
    expect(preview).toContain('&lt;xs:element name=&quot;Priority&quot; type=&quot;xs:int&quot;');
    expect(preview).toContain('&lt;Priority&gt;9&lt;/Priority&gt;');
    // Publish now keeps the attributes.
    expect((await client.post('/admin/news/publish', { id: String(item?.newsId) })).status).toBe(303);
    expect((await other.store.getNews(item?.newsId ?? 0))?.attributes).toEqual({ priority: '9' });
  });
});
