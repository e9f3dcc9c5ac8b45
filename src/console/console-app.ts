/**
 * The admin console: server-rendered pages under /admin/ on the management listener (never on
 * the public port). Plain HTML forms and one stylesheet served from here; no script at all, so
 * it works with JavaScript off and the Content-Security-Policy can forbid every script.
 *
 * Every request but the login page and the stylesheet needs a live console session (cookie
 * `svcapi_console`, HttpOnly, SameSite=Strict, Path=/admin/, Secure over TLS); every POST needs
 * the session's CSRF token and, when the browser sends one, an Origin of this host. Editors may
 * use the news pages only; the rest answers them 403. Changes go through the AdminService made
 * for the signed-in account, so the audit trail names it (`console:<name>`).
 *
 * What it reads and changes comes in through ConsoleDeps (interfaces); the wiring to the real
 * store, domain and wire layer is console-wiring.ts.
 */
import type { IncomingMessage, ServerResponse } from 'node:http';
import type { TLSSocket } from 'node:tls';
import { randomBytes, timingSafeEqual } from 'node:crypto';
import { parse as parseCookies, serialize as serializeCookie } from 'cookie';
import type { Logger } from 'pino';
import type { AdminAccounts, ConsoleSession } from '../domain/admin-accounts.js';
import { csrfMatches } from '../domain/admin-accounts.js';
import type { AdminResult, AdminService, NewsPatch } from '../domain/admin-service.js';
import type { NewsItem, WhatsNewInput } from '../domain/auth-service.js';
import type { MigrationReport } from '../domain/migration-report.js';
import type { Application, AuditRecord, NewsRecord, ShadowDifferenceRecord, User } from '../store/store.js';
import { html, type HtmlValue, type SafeHtml } from './html.js';
import { CONSOLE_CSS } from './style.js';

/** One sample of a metric family, for the move dashboard. */
export interface MetricSample {
  readonly name: string;
  readonly labels: Readonly<Record<string, string | number>>;
  readonly value: number;
}

export interface ConsoleDeps {
  readonly accounts: AdminAccounts;
  /** The operator's operations, audited under `actor`. */
  readonly admin: (actor: string) => AdminService;
  /** WhatsNew's answer as the service computes it, as of `at`. */
  readonly preview: (at: Date, input: WhatsNewInput) => Promise<readonly NewsItem[]>;
  /** The DataTable XML a client receives for these items (the wire layer's writer). */
  readonly renderTable: (items: readonly NewsItem[]) => string;
  /** WhatsNew columns of the compatibility profile filled from a news attribute (column name, attribute name). */
  readonly attributeColumns: readonly { readonly column: string; readonly attribute: string }[];
  /** Recent failed ValidateUser attempts of a login, newest first (audit trail). */
  readonly loginFailures: (login: string, limit: number) => Promise<readonly AuditRecord[]>;
  readonly migrationReport: () => Promise<MigrationReport>;
  /** Metric samples about moving off the legacy service (lazy migration, passthrough, shadow...). */
  readonly moveMetrics: () => Promise<readonly MetricSample[]>;
  /** The last differences shadow / front mode kept (already redacted by their writer), newest first. */
  readonly shadowDifferences: (limit: number) => Promise<readonly ShadowDifferenceRecord[]>;
  readonly logger?: Logger;
  readonly now?: () => Date;
}

export interface ConsoleHandler {
  /** Answers one request whose path is /admin or starts with /admin/. */
  handle(req: IncomingMessage, res: ServerResponse): Promise<void>;
}

export const CONSOLE_PREFIX = '/admin/';
export const SESSION_COOKIE = 'svcapi_console';
const LOGIN_COOKIE = 'svcapi_console_login';
const MAX_FORM_BYTES = 64 * 1024;

const SECURITY_HEADERS: Readonly<Record<string, string>> = {
  'content-security-policy': "default-src 'none'; style-src 'self'; form-action 'self'; frame-ancestors 'none'; base-uri 'none'",
  'x-content-type-options': 'nosniff',
  'cache-control': 'no-store',
  // same-origin, not no-referrer: with no-referrer Chromium sends `Origin: null` on the console's own form posts.
  'referrer-policy': 'same-origin',
  'x-frame-options': 'DENY',
};

/** Fixed messages after a change (POST, redirect, GET): only codes travel in the URL, so nobody can make the console say something else. */
const DONE: Readonly<Record<string, string>> = {
  'news-created': 'News item created.',
  'news-updated': 'News item saved.',
  'news-published': 'News item published now.',
  'news-expired': 'News item expired now.',
  'news-deleted': 'News item deleted.',
  'user-created': 'User created.',
  'user-enabled': 'User enabled.',
  'user-disabled': 'User disabled; their sessions were revoked.',
  'password-set': 'Password set; the user\'s sessions were revoked.',
  granted: 'Application granted.',
  'app-withdrawn': 'Application withdrawn; the user\'s sessions for it were revoked.',
  'session-revoked': 'Session revoked.',
  'sessions-revoked': 'All the user\'s sessions revoked.',
  'throttle-reset': 'Login throttling counters reset.',
  'app-updated': 'Application saved.',
};

/** A form field that cannot be read: the form is shown again with this message. */
class FormError extends Error {}

class HttpError extends Error {
  constructor(readonly status: number, message: string) {
    super(message);
  }
}

type Form = URLSearchParams;

interface Ctx {
  readonly req: IncomingMessage;
  readonly res: ServerResponse;
  readonly url: URL;
  readonly secure: boolean;
  readonly source: string;
  readonly session: ConsoleSession;
  readonly admin: AdminService;
  readonly form: Form;
}

// --- small helpers ---

const iso = (d: Date | null): string => (d === null ? '—' : `${d.toISOString().slice(0, 19).replace('T', ' ')} UTC`);
/** The value of a datetime-local input for a date, in UTC. */
const inputDate = (d: Date | null): string => (d === null ? '' : d.toISOString().slice(0, 16));

/** A datetime-local value read as UTC; null for empty; Invalid Date for anything else. */
function parseInputDate(text: string | null): Date | null {
  const t = (text ?? '').trim();
  if (t === '') return null;
  if (!/^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}(:\d{2})?$/.test(t)) return new Date(Number.NaN);
  return new Date(`${t}Z`);
}

function field(form: Form, name: string): string {
  return form.get(name) ?? '';
}

function optional(form: Form, name: string): string | null {
  const v = field(form, name).trim();
  return v === '' ? null : v;
}

function intField(form: Form | URLSearchParams, name: string): number {
  const v = (form.get(name) ?? '').trim();
  return /^\d{1,10}$/.test(v) ? Number(v) : Number.NaN;
}

/** `name=value` lines as news attributes (empty lines skipped), or what is wrong with a line. */
function parseAttributes(text: string): Record<string, string> | string {
  const out: Record<string, string> = {};
  for (const line of text.split(/\r?\n/)) {
    if (line.trim() === '') continue;
    const eq = line.indexOf('=');
    if (eq <= 0) return `each attribute line is name=value, got ${JSON.stringify(line.slice(0, 80))}`;
    out[line.slice(0, eq).trim()] = line.slice(eq + 1);
  }
  return out;
}

const attributeLines = (attributes: Readonly<Record<string, string>>): string => Object.entries(attributes).map(([k, v]) => `${k}=${v}`).join('\n');

function unwrap<T>(result: AdminResult<T>): T {
  if (result.ok) return result.value;
  throw new HttpError(result.code === 'not-found' ? 404 : result.code === 'conflict' ? 409 : 400, result.message);
}

function newsState(n: NewsRecord, now: Date): SafeHtml {
  if (n.expiresAt !== null && n.expiresAt.getTime() <= now.getTime()) return html`<span class="tag expired">expired</span>`;
  if (n.publishedAt.getTime() > now.getTime()) return html`<span class="tag scheduled">scheduled</span>`;
  return html`<span class="tag live">live</span>`;
}

export function createConsole(deps: ConsoleDeps): ConsoleHandler {
  const now = deps.now ?? (() => new Date());

  function send(res: ServerResponse, status: number, body: string, headers: Record<string, string | string[]> = {}, head = false): void {
    res.writeHead(status, { ...SECURITY_HEADERS, 'content-type': 'text/html; charset=utf-8', 'content-length': String(Buffer.byteLength(body)), ...headers });
    res.end(head ? undefined : body);
  }

  function redirect(res: ServerResponse, location: string, headers: Record<string, string | string[]> = {}): void {
    res.writeHead(303, { ...SECURITY_HEADERS, location, 'content-length': '0', ...headers });
    res.end();
  }

  function cookie(name: string, value: string, secure: boolean, maxAge?: number): string {
    return serializeCookie(name, value, { httpOnly: true, sameSite: 'strict', path: CONSOLE_PREFIX, secure, ...(maxAge !== undefined && { maxAge }) });
  }

  // --- layout ---

  function layout(title: string, session: ConsoleSession | null, body: HtmlValue, here = ''): string {
    const link = (href: string, label: string, key: string): SafeHtml => html`<a href="${href}" class="${here === key ? 'here' : ''}">${label}</a>`;
    const nav = session === null ? '' : html`
<nav>${link('/admin/news', 'News', 'news')}${link('/admin/preview', 'Preview', 'preview')}${session.role === 'admin'
      ? [link('/admin/users', 'Users', 'users'), link('/admin/apps', 'Applications', 'apps'), link('/admin/move', 'Move', 'move')] : ''}</nav>
<div class="who"><span>${session.name} (${session.role})</span>
<form class="inline" method="post" action="/admin/logout"><input type="hidden" name="csrf" value="${session.csrfToken}"><button class="secondary" type="submit">Log out</button></form></div>`;
    return html`<!doctype html>
<html lang="en"><head><meta charset="utf-8"><meta name="viewport" content="width=device-width, initial-scale=1">
<title>${title} · svcapi-auth console</title><link rel="stylesheet" href="/admin/console.css"></head>
<body><header><span class="brand">svcapi-auth console</span>${nav}</header>
<main>${body}</main></body></html>
`.text;
  }

  function flash(url: URL): SafeHtml | string {
    const code = url.searchParams.get('done');
    const message = code === null ? undefined : DONE[code];
    return message === undefined ? '' : html`<div class="flash ok" role="status">${message}</div>`;
  }

  const csrfInput = (session: ConsoleSession): SafeHtml => html`<input type="hidden" name="csrf" value="${session.csrfToken}">`;

  function postButton(session: ConsoleSession, action: string, fields: Record<string, string | number>, label: string, kind = 'secondary'): SafeHtml {
    return html`<form class="inline" method="post" action="${action}">${csrfInput(session)}${Object.entries(fields).map(([k, v]) => html`<input type="hidden" name="${k}" value="${String(v)}">`)}<button class="${kind}" type="submit">${label}</button></form>`;
  }

  // --- login ---

  function loginPage(res: ServerResponse, secure: boolean, status: number, error: string | null, name = ''): void {
    const token = randomBytes(24).toString('base64url');
    const body = html`<div class="login"><h1>Sign in</h1>
${error === null ? '' : html`<div class="flash error" role="alert">${error}</div>`}
<form class="card" method="post" action="/admin/login">
<input type="hidden" name="csrf" value="${token}">
<label for="name">Name</label><input type="text" id="name" name="name" value="${name}" autocomplete="username" required>
<label for="password">Password</label><input type="password" id="password" name="password" autocomplete="current-password" required>
<p><button type="submit">Sign in</button></p></form>
<p class="note">Accounts are made with <code>svcapi-auth admin add NAME --role editor|admin</code>.</p></div>`;
    // Login CSRF: the form's token must equal this cookie's (double submit), so another site cannot sign a browser in.
    send(res, status, layout('Sign in', null, body), { 'set-cookie': cookie(LOGIN_COOKIE, token, secure, 3600) });
  }

  async function login(req: IncomingMessage, res: ServerResponse, secure: boolean, source: string): Promise<void> {
    const form = await readForm(req);
    const cookies = parseCookies(req.headers.cookie ?? '');
    const expected = cookies[LOGIN_COOKIE] ?? '';
    const submitted = field(form, 'csrf');
    if (expected === '' || !sameText(expected, submitted)) {
      return loginPage(res, secure, 403, 'The form expired or was not sent from this console; please sign in again.');
    }
    const name = field(form, 'name');
    const result = await deps.accounts.login(name, field(form, 'password'), source);
    if (!result.ok) return loginPage(res, secure, 401, 'Wrong name or password, or too many attempts; wait and try again.', name);
    // A new session id at every login (no fixation); any earlier session cookie is simply replaced.
    redirect(res, '/admin/', { 'set-cookie': [cookie(SESSION_COOKIE, result.sessionId, secure), cookie(LOGIN_COOKIE, '', secure, 0)] });
  }

  // --- news ---

  async function newsList(c: Ctx): Promise<string> {
    const apps = await c.admin.listApplications();
    const appFilter = intField(c.url.searchParams, 'app');
    const langFilter = (c.url.searchParams.get('lang') ?? '').trim().toLowerCase();
    const rows = unwrap(await c.admin.listNews(Number.isNaN(appFilter) ? {} : { appId: appFilter }))
      .filter((n) => langFilter === '' || n.language.toLowerCase() === langFilter);
    const at = now();
    const appName = new Map(apps.map((a) => [a.appId, a.name]));
    const body = html`<h1>News</h1>${flash(c.url)}
<form class="card" method="get" action="/admin/news"><div class="row">
<div><label for="app">Application</label><select id="app" name="app"><option value="">all</option>${apps.map((a) => html`<option value="${a.appId}" ${a.appId === appFilter ? html`selected` : ''}>${a.appId} · ${a.name}</option>`)}</select></div>
<div><label for="lang">Language</label><input type="text" id="lang" name="lang" value="${langFilter}" placeholder="e.g. en, pt-BR"></div>
</div><p><button type="submit" class="secondary">Filter</button> <a href="/admin/news/new">New news item</a></p></form>
<table><thead><tr><th>ID</th><th>Application</th><th>Lang</th><th>Title</th><th>State</th><th>Published</th><th>Expires</th><th>Versions</th><th>Members</th><th>Attributes</th><th></th></tr></thead><tbody>
${rows.map((n) => html`<tr><td class="num">${n.newsId}</td><td>${n.appId} · ${appName.get(n.appId) ?? ''}</td><td>${n.language}</td><td>${n.title}</td><td>${newsState(n, at)}</td>
<td>${iso(n.publishedAt)}</td><td>${iso(n.expiresAt)}</td><td>${n.minVersion ?? '*'} – ${n.maxVersion ?? '*'}</td><td>${n.membersOnly ? 'yes' : 'no'}</td>
<td class="mono">${Object.entries(n.attributes).map(([k, v]) => html`${k}=${v.length > 40 ? `${v.slice(0, 40)}…` : v}<br>`)}</td>
<td><a href="/admin/news/edit?id=${n.newsId}">Edit</a>
${n.publishedAt.getTime() > at.getTime() ? postButton(c.session, '/admin/news/publish', { id: n.newsId }, 'Publish now') : ''}
${n.expiresAt === null || n.expiresAt.getTime() > at.getTime() ? postButton(c.session, '/admin/news/expire', { id: n.newsId }, 'Expire now') : ''}
${postButton(c.session, '/admin/news/delete', { id: n.newsId }, 'Delete', 'danger')}</td></tr>`)}
</tbody></table>${rows.length === 0 ? html`<p class="muted">No news items.</p>` : ''}`;
    return layout('News', c.session, body, 'news');
  }

  function newsForm(c: Ctx, apps: readonly Application[], item: NewsRecord | null, error: string | null, values?: Form): string {
    const v = (name: string, fallback: string): string => (values === undefined ? fallback : field(values, name));
    const checked = values === undefined ? item?.membersOnly === true : values.get('membersOnly') === 'on';
    const body = html`<h1>${item === null ? 'New news item' : `Edit news item ${item.newsId}`}</h1>
${error === null ? '' : html`<div class="flash error" role="alert">${error}</div>`}
<form class="card" method="post" action="${item === null ? '/admin/news/create' : '/admin/news/update'}">${csrfInput(c.session)}
${item === null ? '' : html`<input type="hidden" name="id" value="${item.newsId}">`}
<div class="row"><div><label for="app">Application</label>
${item === null ? html`<select id="app" name="app">${apps.map((a) => html`<option value="${a.appId}" ${String(a.appId) === v('app', '') ? html`selected` : ''}>${a.appId} · ${a.name}</option>`)}</select>`
    : html`<input type="text" id="app" value="${item.appId}" disabled>`}</div>
<div><label for="language">Language (BCP 47; empty: the application's default)</label><input type="text" id="language" name="language" value="${v('language', item?.language ?? '')}"></div></div>
<label for="title">Title</label><input type="text" id="title" name="title" value="${v('title', item?.title ?? '')}" required maxlength="500">
<label for="body">Body</label><textarea id="body" name="body">${v('body', item?.body ?? '')}</textarea>
<label for="url">Link (optional)</label><input type="text" id="url" name="url" value="${v('url', item?.url ?? '')}">
<div class="row"><div><label for="publishedAt">Publish at (UTC; empty: now)</label><input type="datetime-local" id="publishedAt" name="publishedAt" value="${v('publishedAt', inputDate(item?.publishedAt ?? null))}"></div>
<div><label for="expiresAt">Expires at (UTC; empty: never)</label><input type="datetime-local" id="expiresAt" name="expiresAt" value="${v('expiresAt', inputDate(item?.expiresAt ?? null))}"></div></div>
<div class="row"><div><label for="minVersion">Lowest app version (optional)</label><input type="text" id="minVersion" name="minVersion" value="${v('minVersion', item?.minVersion ?? '')}" placeholder="e.g. 2.0"></div>
<div><label for="maxVersion">Highest app version (optional)</label><input type="text" id="maxVersion" name="maxVersion" value="${v('maxVersion', item?.maxVersion ?? '')}" placeholder="e.g. 2.9.9"></div></div>
<p><label class="check"><input type="checkbox" name="membersOnly" ${checked ? html`checked` : ''}> Members only (shown only with a valid AppToken)</label></p>
<label for="attributes">Attributes (one name=value per line)</label><textarea id="attributes" name="attributes">${v('attributes', attributeLines(item?.attributes ?? {}))}</textarea>
<p class="muted">${deps.attributeColumns.length === 0
    ? 'The WhatsNew table of this configuration shows no attribute; attributes are kept for a compatibility profile that does.'
    : html`WhatsNew shows ${deps.attributeColumns.map((c, i) => html`${i > 0 ? ', ' : ''}<code>${c.attribute}</code> as column ${c.column}`)}; an item without one leaves its cell out.`}</p>
<p><button type="submit">${item === null ? 'Create' : 'Save'}</button> <a href="/admin/news">Cancel</a></p></form>`;
    return layout(item === null ? 'New news item' : 'Edit news item', c.session, body, 'news');
  }

  function newsFields(form: Form): Omit<NewsPatch, 'language' | 'title' | 'body'> & { language: string | null; title: string; body: string } {
    const published = parseInputDate(form.get('publishedAt'));
    const attributes = parseAttributes(field(form, 'attributes'));
    if (typeof attributes === 'string') throw new FormError(attributes);
    return {
      attributes,
      language: optional(form, 'language'),
      title: field(form, 'title'),
      body: field(form, 'body'),
      url: optional(form, 'url'),
      ...(published !== null && { publishedAt: published }),
      expiresAt: parseInputDate(form.get('expiresAt')),
      minVersion: optional(form, 'minVersion'),
      maxVersion: optional(form, 'maxVersion'),
      membersOnly: form.get('membersOnly') === 'on',
    };
  }

  async function newsCreate(c: Ctx): Promise<string | null> {
    let result: AdminResult<NewsRecord>;
    try {
      const { language, ...rest } = newsFields(c.form);
      result = await c.admin.addNews({ ...rest, appId: intField(c.form, 'app'), ...(language !== null && { language }) });
    } catch (error) {
      if (!(error instanceof FormError)) throw error;
      result = { ok: false, code: 'invalid', message: error.message };
    }
    if (!result.ok) {
      c.res.statusCode = 400;
      return newsForm(c, await c.admin.listApplications(), null, result.message, c.form);
    }
    redirect(c.res, `/admin/news?app=${result.value.appId}&done=news-created`);
    return null;
  }

  async function newsUpdate(c: Ctx): Promise<string | null> {
    const id = intField(c.form, 'id');
    const existing = unwrap(await c.admin.getNews(id));
    let result: AdminResult<NewsRecord>;
    try {
      const { language, ...rest } = newsFields(c.form);
      // An empty publication time on an edit keeps the scheduled one (use Publish now to publish).
      result = await c.admin.updateNews(id, { ...rest, ...(language !== null && { language }) });
    } catch (error) {
      if (!(error instanceof FormError)) throw error;
      result = { ok: false, code: 'invalid', message: error.message };
    }
    if (!result.ok) {
      c.res.statusCode = 400;
      return newsForm(c, [], existing, result.message, c.form);
    }
    redirect(c.res, `/admin/news?app=${result.value.appId}&done=news-updated`);
    return null;
  }

  async function newsAction(c: Ctx, action: 'publish' | 'expire' | 'delete'): Promise<null> {
    const id = intField(c.form, 'id');
    const at = now();
    const result = action === 'delete' ? await c.admin.removeNews(id)
      : await c.admin.updateNews(id, action === 'publish' ? { publishedAt: at } : { expiresAt: at });
    const row = unwrap(result);
    redirect(c.res, `/admin/news?app=${row.appId}&done=news-${action === 'delete' ? 'deleted' : action === 'publish' ? 'published' : 'expired'}`);
    return null;
  }

  async function preview(c: Ctx): Promise<string> {
    const q = c.url.searchParams;
    const apps = await c.admin.listApplications();
    const appId = intField(q, 'app');
    const version = (q.get('version') ?? '').trim();
    const language = (q.get('lang') ?? '').trim();
    const qtyText = (q.get('qty') ?? '').trim();
    const qty = qtyText === '' ? 10 : intField(q, 'qty');
    const atText = q.get('at') ?? '';
    const at = parseInputDate(atText) ?? now();
    let result: SafeHtml | string = '';
    if (q.has('app')) {
      if (Number.isNaN(appId) || Number.isNaN(qty) || Number.isNaN(at.getTime())) {
        result = html`<div class="flash error" role="alert">Choose an application, a whole number of items and a valid time.</div>`;
      } else {
        const items = await deps.preview(at, { appToken: null, appId, appVersion: version === '' ? null : version, language: language === '' ? null : language, qtyNews: qty });
        result = html`<h2>WhatsNew rows (${items.length}) as of ${iso(at)}</h2>
<table id="preview-rows"><thead><tr><th>NewsID</th><th>AppID</th><th>Title</th><th>Body</th><th>Language</th><th>URL</th><th>Published</th><th>Attributes</th></tr></thead><tbody>
${items.map((n) => html`<tr><td class="num">${n.newsId}</td><td>${n.appId}</td><td>${n.title}</td><td>${n.body}</td><td>${n.language}</td><td>${n.url}</td><td>${iso(n.publishedAt)}</td>
<td class="mono">${Object.entries(n.attributes).map(([k, v]) => html`${k}=${v}<br>`)}</td></tr>`)}
</tbody></table>${items.length === 0 ? html`<p class="muted">WhatsNew returns no rows for this call.</p>` : ''}
<h2>DataTable a client receives (HTTP GET/POST layout, this configuration's WhatsNew table)</h2><pre>${deps.renderTable(items)}</pre>`;
      }
    }
    const body = html`<h1>WhatsNew preview</h1>
<p class="note">Computed by the service's own WhatsNew (language fallback, version limits, schedule, expiry, quantity), as an anonymous caller: members-only items appear only to callers with a valid AppToken.</p>
<form class="card" method="get" action="/admin/preview"><div class="row">
<div><label for="app">AppID</label><select id="app" name="app">${apps.map((a) => html`<option value="${a.appId}" ${a.appId === appId ? html`selected` : ''}>${a.appId} · ${a.name}</option>`)}</select></div>
<div><label for="version">AppVersion</label><input type="text" id="version" name="version" value="${version}" placeholder="e.g. 2.5.1"></div>
<div><label for="lang">Language</label><input type="text" id="lang" name="lang" value="${language}" placeholder="e.g. en-US"></div>
<div><label for="qty">QtyNews</label><input type="number" id="qty" name="qty" value="${qtyText === '' ? '10' : qtyText}" min="0"></div>
<div><label for="at">As of (UTC; empty: now)</label><input type="datetime-local" id="at" name="at" value="${atText}"></div>
</div><p><button type="submit">Preview</button></p></form>${result}`;
    return layout('Preview', c.session, body, 'preview');
  }

  // --- users ---

  async function users(c: Ctx, error: string | null = null): Promise<string> {
    const q = (c.url.searchParams.get('q') ?? '').trim();
    const apps = await c.admin.listApplications();
    const all = unwrap(await c.admin.listUsers());
    const found = q === '' ? all.slice(0, 100) : all.filter((u) => u.login.toLowerCase().includes(q.toLowerCase())).slice(0, 100);
    const body = html`<h1>Users</h1>${flash(c.url)}${error === null ? '' : html`<div class="flash error" role="alert">${error}</div>`}
<form class="card" method="get" action="/admin/users"><label for="q">Search by login</label><input type="search" id="q" name="q" value="${q}"> <button class="secondary" type="submit">Search</button></form>
<table><thead><tr><th>Login</th><th>State</th><th>Applications</th><th>Created</th><th>Last login</th></tr></thead><tbody>
${found.map((u) => html`<tr><td><a href="/admin/user?login=${encodeURIComponent(u.login)}">${u.login}</a></td><td>${u.enabled ? html`<span class="tag live">enabled</span>` : html`<span class="tag off">disabled</span>`}</td>
<td>${u.appIds.join(', ')}</td><td>${iso(u.createdAt)}</td><td>${iso(u.lastLoginAt)}</td></tr>`)}</tbody></table>
<p class="muted">${found.length} shown of ${all.length}.</p>
<h2>New user</h2><form class="card" method="post" action="/admin/users/create">${csrfInput(c.session)}
<label for="login">Login</label><input type="text" id="login" name="login" required>
<label for="new-password">Password</label><input type="password" id="new-password" name="password" autocomplete="new-password" required>
<label for="confirm">Password again</label><input type="password" id="confirm" name="confirm" autocomplete="new-password" required>
<label>Applications</label>${apps.map((a) => html`<label class="check"><input type="checkbox" name="app" value="${a.appId}"> ${a.appId} · ${a.name}</label> `)}
<p><label class="check"><input type="checkbox" name="disabled"> Create disabled</label></p>
<p><button type="submit">Create user</button></p></form>`;
    return layout('Users', c.session, body, 'users');
  }

  async function userCreate(c: Ctx): Promise<string | null> {
    const password = field(c.form, 'password');
    if (password !== field(c.form, 'confirm')) {
      c.res.statusCode = 400;
      return users(c, 'The two passwords differ.');
    }
    const result = await c.admin.addUser({
      login: field(c.form, 'login'), password, appIds: c.form.getAll('app').map(Number).filter(Number.isSafeInteger), enabled: c.form.get('disabled') !== 'on',
    });
    if (!result.ok) {
      c.res.statusCode = 400;
      return users(c, result.message);
    }
    redirect(c.res, `/admin/user?login=${encodeURIComponent(result.value.login)}&done=user-created`);
    return null;
  }

  async function userPage(c: Ctx, login: string, error: string | null = null): Promise<string> {
    const user: User = unwrap(await c.admin.getUser(login));
    const apps = await c.admin.listApplications();
    const sessions = unwrap(await c.admin.listSessions(user.login));
    const throttle = unwrap(await c.admin.loginThrottle(user.login));
    const failures = await deps.loginFailures(user.login, 20);
    const hidden = { login: user.login };
    const appName = new Map(apps.map((a) => [a.appId, a.name]));
    const body = html`<h1>User ${user.login}</h1>${flash(c.url)}${error === null ? '' : html`<div class="flash error" role="alert">${error}</div>`}
<div class="card"><p>${user.enabled ? html`<span class="tag live">enabled</span>` : html`<span class="tag off">disabled</span>`}
 Created ${iso(user.createdAt)} · last login ${iso(user.lastLoginAt)} · password changed ${iso(user.passwordChangedAt)}</p>
<p>${user.enabled ? postButton(c.session, '/admin/user/disable', hidden, 'Disable (revokes sessions)', 'danger') : postButton(c.session, '/admin/user/enable', hidden, 'Enable')}</p></div>
<h2>Applications</h2><table><thead><tr><th>AppID</th><th>Name</th><th></th></tr></thead><tbody>
${user.appIds.map((id) => html`<tr><td>${id}</td><td>${appName.get(id) ?? ''}</td><td>${postButton(c.session, '/admin/user/revoke-app', { ...hidden, app: id }, 'Withdraw')}</td></tr>`)}</tbody></table>
<form class="card" method="post" action="/admin/user/grant">${csrfInput(c.session)}<input type="hidden" name="login" value="${user.login}">
<label for="grant-app">Grant an application</label><select id="grant-app" name="app">${apps.filter((a) => !user.appIds.includes(a.appId)).map((a) => html`<option value="${a.appId}">${a.appId} · ${a.name}</option>`)}</select>
<button type="submit" class="secondary">Grant</button></form>
<h2>Live sessions (${sessions.length})</h2>
<table id="sessions"><thead><tr><th>ID</th><th>AppID</th><th>Issued</th><th>Last used</th><th>Expires</th><th>Source</th><th>Client IP</th><th>Origin</th><th></th></tr></thead><tbody>
${sessions.map((s) => html`<tr><td class="mono">${s.id}</td><td>${s.appId}</td><td>${iso(s.issuedAt)}</td><td>${iso(s.lastUsedAt)}</td><td>${iso(s.expiresAt)}</td><td>${s.sourceIp ?? '—'}</td><td>${s.clientIp ?? '—'}</td><td class="origin">${s.origin}</td>
<td>${postButton(c.session, '/admin/user/revoke-session', { ...hidden, id: s.id }, 'Revoke', 'danger')}</td></tr>`)}</tbody></table>
${sessions.length > 0 ? html`<p>${postButton(c.session, '/admin/user/revoke-all', hidden, 'Revoke all sessions', 'danger')}</p>` : ''}
<p class="note">A session's ID is a fingerprint of its token (the first 12 hex digits of its SHA-256, as the audit trail and <code>svcapi-auth token list</code> show it), never the token. Origin: <em>ours</em> when this service issued it, <em>legacy</em> when the old service issued it (brought by <code>svcapi-auth import tokens</code>, or stored by token adoption: the audit trail's <code>token.adopted</code>).</p>
<h2>Set password</h2><form class="card" method="post" action="/admin/user/password">${csrfInput(c.session)}<input type="hidden" name="login" value="${user.login}">
<label for="password">New password</label><input type="password" id="password" name="password" autocomplete="new-password" required>
<label for="confirm">New password again</label><input type="password" id="confirm" name="confirm" autocomplete="new-password" required>
<p><button type="submit">Set password (revokes sessions)</button></p></form>
<h2>Login throttling</h2><div class="card"><p>Login ceiling: ${throttle.failures} of ${throttle.limit} failures in the window${throttle.underWay > 0 ? ` (+${throttle.underWay} under way)` : ''};
 ${throttle.tripped ? html`<strong>tripped</strong> until ${iso(throttle.windowEndsAt)}` : 'not tripped'}.
 Sources with failures: ${throttle.pairCount}; known good sources: ${throttle.knownSourceCount}.</p>
${throttle.pairs.length === 0 ? '' : html`<table><thead><tr><th>Source</th><th>Failures</th><th>Blocked until</th></tr></thead><tbody>${throttle.pairs.map((p) => html`<tr><td class="mono">${p.source}</td><td class="num">${p.failures}</td><td>${iso(p.blockedUntil)}</td></tr>`)}</tbody></table>`}
<p>${postButton(c.session, '/admin/user/throttle-reset', hidden, 'Reset counters')}</p></div>
<h2>Recent failed logins</h2><table><thead><tr><th>When</th><th>Outcome</th><th>AppID</th><th>Source</th><th>Claimed IP</th></tr></thead><tbody>
${failures.map((f) => html`<tr><td>${iso(f.at)}</td><td>${f.reason ?? f.type}</td><td>${f.appId ?? ''}</td><td>${f.sourceIp ?? ''}</td><td>${f.claimedIp ?? ''}</td></tr>`)}</tbody></table>
${failures.length === 0 ? html`<p class="muted">None in the audit trail.</p>` : ''}`;
    return layout(`User ${user.login}`, c.session, body, 'users');
  }

  async function userAction(c: Ctx, action: string): Promise<string | null> {
    const login = field(c.form, 'login');
    const back = (done: string): null => {
      redirect(c.res, `/admin/user?login=${encodeURIComponent(login)}&done=${done}`);
      return null;
    };
    const failed = async (message: string): Promise<string> => {
      c.res.statusCode = 400;
      return userPage(c, login, message);
    };
    switch (action) {
      case 'enable':
      case 'disable':
        unwrap(await c.admin.setUserEnabled(login, action === 'enable'));
        return back(action === 'enable' ? 'user-enabled' : 'user-disabled');
      case 'password': {
        const password = field(c.form, 'password');
        if (password !== field(c.form, 'confirm')) return failed('The two passwords differ.');
        const result = await c.admin.changePassword(login, password);
        return result.ok ? back('password-set') : failed(result.message);
      }
      case 'grant':
      case 'revoke-app': {
        const app = intField(c.form, 'app');
        const result = action === 'grant' ? await c.admin.grantApplication(login, app) : await c.admin.revokeApplication(login, app);
        return result.ok ? back(action === 'grant' ? 'granted' : 'app-withdrawn') : failed(result.message);
      }
      case 'revoke-session': {
        const result = await c.admin.revokeSession(field(c.form, 'id'), login);
        return result.ok ? back('session-revoked') : failed(result.message);
      }
      case 'revoke-all':
        unwrap(await c.admin.revokeTokens({ login }));
        return back('sessions-revoked');
      case 'throttle-reset':
        unwrap(await c.admin.resetLoginThrottle(login));
        return back('throttle-reset');
      default:
        throw new HttpError(404, 'No such page.');
    }
  }

  // --- applications ---

  async function appsPage(c: Ctx): Promise<string> {
    const apps = await c.admin.listApplications();
    const body = html`<h1>Applications</h1>${flash(c.url)}
<table><thead><tr><th>AppID</th><th>Name</th><th>State</th><th>Require IP</th><th>Token lifetime</th><th>Idle timeout</th><th>Language</th><th>Login URL</th><th>Trusted callers</th><th></th></tr></thead><tbody>
${apps.map((a) => html`<tr><td>${a.appId}</td><td>${a.name}</td><td>${a.enabled ? html`<span class="tag live">enabled</span>` : html`<span class="tag off">disabled</span>`}</td>
<td>${a.requireIp ? 'yes' : 'no'}</td><td class="num">${a.tokenLifetimeSeconds} s</td><td class="num">${a.idleTimeoutSeconds === null ? 'none' : `${a.idleTimeoutSeconds} s`}</td>
<td>${a.defaultLanguage}</td><td>${a.loginUrl ?? '—'}</td><td>${a.trustedCallers.join(', ') || '—'}</td><td><a href="/admin/app?id=${a.appId}">Edit</a></td></tr>`)}</tbody></table>`;
    return layout('Applications', c.session, body, 'apps');
  }

  async function appPage(c: Ctx, appId: number, error: string | null = null, values?: Form): Promise<string> {
    const a = unwrap(await c.admin.getApplication(appId));
    const v = (name: string, fallback: string): string => (values === undefined ? fallback : field(values, name));
    const check = (name: string, fallback: boolean): boolean => (values === undefined ? fallback : values.get(name) === 'on');
    const body = html`<h1>Application ${a.appId}</h1>${error === null ? '' : html`<div class="flash error" role="alert">${error}</div>`}
<form class="card" method="post" action="/admin/app/update">${csrfInput(c.session)}<input type="hidden" name="id" value="${a.appId}">
<label for="name">Name</label><input type="text" id="name" name="name" value="${v('name', a.name)}" required>
<p><label class="check"><input type="checkbox" name="enabled" ${check('enabled', a.enabled) ? html`checked` : ''}> Enabled (disabling revokes its tokens)</label>
<label class="check"><input type="checkbox" name="requireIp" ${check('requireIp', a.requireIp) ? html`checked` : ''}> ValidateUser requires a valid IPAddress</label></p>
<label for="loginUrl">Login URL (empty: none)</label><input type="text" id="loginUrl" name="loginUrl" value="${v('loginUrl', a.loginUrl ?? '')}">
<div class="row"><div><label for="lifetime">Token lifetime (seconds)</label><input type="number" id="lifetime" name="tokenLifetimeSeconds" value="${v('tokenLifetimeSeconds', String(a.tokenLifetimeSeconds))}" min="1"></div>
<div><label for="idle">Idle timeout (seconds; empty: none)</label><input type="number" id="idle" name="idleTimeoutSeconds" value="${v('idleTimeoutSeconds', a.idleTimeoutSeconds === null ? '' : String(a.idleTimeoutSeconds))}" min="1"></div>
<div><label for="lang">Default news language</label><input type="text" id="lang" name="defaultLanguage" value="${v('defaultLanguage', a.defaultLanguage)}"></div></div>
<label for="trusted">Trusted callers (addresses or CIDR ranges, one per line)</label><textarea id="trusted" name="trustedCallers">${v('trustedCallers', a.trustedCallers.join('\n'))}</textarea>
<p><button type="submit">Save</button> <a href="/admin/apps">Cancel</a></p></form>`;
    return layout(`Application ${a.appId}`, c.session, body, 'apps');
  }

  async function appUpdate(c: Ctx): Promise<string | null> {
    const appId = intField(c.form, 'id');
    const lifetime = intField(c.form, 'tokenLifetimeSeconds');
    const idleText = field(c.form, 'idleTimeoutSeconds').trim();
    const idle = idleText === '' ? null : intField(c.form, 'idleTimeoutSeconds');
    const result = await c.admin.updateApplication(appId, {
      name: field(c.form, 'name'),
      enabled: c.form.get('enabled') === 'on',
      requireIp: c.form.get('requireIp') === 'on',
      loginUrl: optional(c.form, 'loginUrl'),
      tokenLifetimeSeconds: lifetime,
      idleTimeoutSeconds: idle,
      defaultLanguage: field(c.form, 'defaultLanguage').trim(),
      trustedCallers: field(c.form, 'trustedCallers').split(/[\s,]+/).filter((s) => s !== ''),
    });
    if (!result.ok) {
      c.res.statusCode = result.code === 'not-found' ? 404 : 400;
      return appPage(c, appId, result.message, c.form);
    }
    redirect(c.res, '/admin/apps?done=app-updated');
    return null;
  }

  // --- move dashboard ---

  const SHADOW_DIFFERENCES_SHOWN = 20;

  async function movePage(c: Ctx): Promise<string> {
    const [report, metrics, differences] = await Promise.all([deps.migrationReport(), deps.moveMetrics(), deps.shadowDifferences(SHADOW_DIFFERENCES_SHOWN)]);
    const labels = (l: Readonly<Record<string, string | number>>): string => Object.entries(l).map(([k, v]) => `${k}=${String(v)}`).join(', ');
    const pt = report.passthrough;
    const ptRows = ([['check', pt.checks], ['relay', pt.relays], ['adoption', pt.adoptions]] as const)
      .flatMap(([kind, counts]) => counts.filter((c) => c.last30Days > 0).map((c) => [kind, c] as const));
    const body = html`<h1>Moving off the legacy service</h1>
<h2>Password hashes (${report.users} users)</h2>
<table><thead><tr><th>Format</th><th>Users</th><th>Status</th></tr></thead><tbody>
${report.formats.map((f) => html`<tr><td>${f.format}</td><td class="num">${f.users}</td><td>${f.status}</td></tr>`)}</tbody></table>
<p>Users the legacy service vouched for at their first login here (lazy migration): <strong>${report.migratedByLegacyService}</strong>.</p>
<p>Live sessions the legacy service issued (import tokens, token adoption): <strong>${report.legacyTokensLive}</strong>.</p>
<h2>Token passthrough, every instance on this database</h2>
<p>Last vouched-for legacy token: <strong>${pt.lastVouchedAt === null ? 'never' : `${iso(pt.lastVouchedAt)} (${pt.lastVouchedDaysAgo ?? 0} days ago)`}</strong>.</p>
${ptRows.length === 0 ? html`<p class="muted">Nothing counted in the last 30 days.</p>` : html`<table><thead><tr><th>Kind</th><th>Result</th><th>Last 7 days</th><th>Last 30 days</th></tr></thead><tbody>
${ptRows.map(([kind, c]) => html`<tr><td>${kind}</td><td>${c.result}</td><td class="num">${c.last7Days}</td><td class="num">${c.last30Days}</td></tr>`)}</tbody></table>`}
<p class="note">UTC days to ${pt.today}; each <code>serve</code> writes its counts about once a minute and at shutdown. No client uses old tokens any more when
nothing was vouched for (<code>valid</code>, <code>cached_valid</code>) for as long as the old tokens live: then passthrough can be turned off (docs/cutover.md).</p>
<h2>Counters since this process started</h2>
<table><thead><tr><th>Metric</th><th>Labels</th><th>Value</th></tr></thead><tbody>
${metrics.map((m) => html`<tr><td class="mono">${m.name}</td><td class="mono">${labels(m.labels)}</td><td class="num">${m.value}</td></tr>`)}</tbody></table>
${metrics.length === 0 ? html`<p class="muted">No samples yet.</p>` : ''}
<p class="note">Token passthrough counters (<code>svcapi_auth_legacy_token_*</code>) show here while <code>legacy.tokenPassthrough</code> is on,
shadow-traffic counters (<code>svcapi_auth_shadow_total</code>, docs/move-guide.md step 4) while <code>legacy.shadow.rate</code> or <code>legacy.mode: front</code> is set. The same numbers are on /metrics.</p>
<h2>Last differences on live traffic (${differences.length})</h2>
${differences.length === 0 ? html`<p class="muted">None kept: shadowing is off, or every compared answer was the same.</p>` : html`<table><thead><tr><th>When</th><th>Mode</th><th>Operation</th><th>Binding</th><th>Difference (secrets as fingerprints)</th></tr></thead><tbody>
${differences.map((d) => html`<tr><td>${d.at.toISOString()}</td><td>${d.mode}</td><td>${d.operation ?? '-'}</td><td>${d.binding}</td><td><pre class="mono">${d.diff}</pre></td></tr>`)}</tbody></table>`}
<p class="note">All of them, with the requests and both answers: <code>svcapi-auth compat shadow-report</code>.</p>`;
    return layout('Move', c.session, body, 'move');
  }

  async function home(c: Ctx): Promise<string> {
    const body = html`<h1>Welcome, ${c.session.name}</h1>
<div class="card"><p><a href="/admin/news">News</a>: list, create, schedule, expire and delete WhatsNew items; <a href="/admin/preview">preview</a> exactly what a client receives.</p>
${c.session.role === 'admin' ? html`<p><a href="/admin/users">Users</a>: search, create, enable or disable, passwords, grants, live sessions, throttling.</p>
<p><a href="/admin/apps">Applications</a>: login URL, lifetimes, IP requirement, trusted callers.</p>
<p><a href="/admin/move">Move</a>: password hash formats, lazy-migration figures and token passthrough's counts.</p>` : html`<p class="muted">Your role (editor) manages news only.</p>`}
<p class="muted">This session ends after a while without use (console.idleTimeoutMs), and at ${iso(c.session.expiresAt)} at the latest.</p></div>`;
    return layout('Home', c.session, body);
  }

  // --- routing ---

  type Route = { readonly admin: boolean; readonly run: (c: Ctx) => Promise<string | null> };
  const GET: Readonly<Record<string, Route>> = {
    '/admin/': { admin: false, run: home },
    '/admin/news': { admin: false, run: newsList },
    '/admin/news/new': { admin: false, run: async (c) => newsForm(c, await c.admin.listApplications(), null, null) },
    '/admin/news/edit': { admin: false, run: async (c) => newsForm(c, [], unwrap(await c.admin.getNews(intField(c.url.searchParams, 'id'))), null) },
    '/admin/preview': { admin: false, run: preview },
    '/admin/users': { admin: true, run: (c) => users(c) },
    '/admin/user': { admin: true, run: (c) => userPage(c, c.url.searchParams.get('login') ?? '') },
    '/admin/apps': { admin: true, run: appsPage },
    '/admin/app': { admin: true, run: (c) => appPage(c, intField(c.url.searchParams, 'id')) },
    '/admin/move': { admin: true, run: movePage },
  };
  const POST: Readonly<Record<string, Route>> = {
    '/admin/news/create': { admin: false, run: newsCreate },
    '/admin/news/update': { admin: false, run: newsUpdate },
    '/admin/news/publish': { admin: false, run: (c) => newsAction(c, 'publish') },
    '/admin/news/expire': { admin: false, run: (c) => newsAction(c, 'expire') },
    '/admin/news/delete': { admin: false, run: (c) => newsAction(c, 'delete') },
    '/admin/users/create': { admin: true, run: userCreate },
    '/admin/app/update': { admin: true, run: appUpdate },
    ...Object.fromEntries(['enable', 'disable', 'password', 'grant', 'revoke-app', 'revoke-session', 'revoke-all', 'throttle-reset']
      .map((a) => [`/admin/user/${a}`, { admin: true, run: (c: Ctx) => userAction(c, a) }])),
  };

  function errorPage(res: ServerResponse, session: ConsoleSession | null, status: number, message: string, head = false): void {
    send(res, status, layout(`Error ${status}`, session, html`<h1>${status === 403 ? 'Not allowed' : status === 404 ? 'Not found' : 'Cannot do that'}</h1><div class="flash error" role="alert">${message}</div><p><a href="/admin/">Back to the console</a></p>`), {}, head);
  }

  /** POSTs from another origin are refused even before the CSRF token is looked at (defence in depth). */
  function foreignOrigin(req: IncomingMessage, secure: boolean): boolean {
    const origin = req.headers.origin;
    if (origin === undefined) return false;
    return origin !== `${secure ? 'https' : 'http'}://${req.headers.host ?? ''}`;
  }

  async function handle(req: IncomingMessage, res: ServerResponse): Promise<void> {
    const url = new URL(req.url ?? '/', 'http://console.invalid');
    const path = url.pathname;
    const method = req.method ?? 'GET';
    const head = method === 'HEAD';
    const secure = (req.socket as Partial<TLSSocket>).encrypted === true;
    const source = req.socket.remoteAddress ?? '';
    if (path === '/admin') return redirect(res, '/admin/');
    if (path === '/admin/console.css') {
      if (method !== 'GET' && !head) return errorPage(res, null, 405, 'Method not allowed.');
      return send(res, 200, CONSOLE_CSS, { 'content-type': 'text/css; charset=utf-8', 'cache-control': 'public, max-age=3600' }, head);
    }
    if (method !== 'GET' && !head && method !== 'POST') {
      res.setHeader('allow', 'GET, HEAD, POST');
      return errorPage(res, null, 405, 'Method not allowed.');
    }
    if (method === 'POST' && foreignOrigin(req, secure)) return errorPage(res, null, 403, 'This form was not sent from this console.');
    if (path === '/admin/login') {
      if (method === 'POST') return login(req, res, secure, source);
      return loginPage(res, secure, 200, null);
    }

    const sessionId = parseCookies(req.headers.cookie ?? '')[SESSION_COOKIE] ?? '';
    const session = sessionId === '' ? null : await deps.accounts.session(sessionId);
    if (session === null) {
      const clear: Record<string, string> = sessionId === '' ? {} : { 'set-cookie': cookie(SESSION_COOKIE, '', secure, 0) };
      if (method === 'POST') return errorPage(res, null, 401, 'Your session has ended; please sign in again.');
      return redirect(res, '/admin/login', clear);
    }

    let form: Form = new URLSearchParams();
    if (method === 'POST') {
      form = await readForm(req);
      // The synchronizer token: a form from another site cannot know it.
      if (!csrfMatches(session, form.get('csrf'))) return errorPage(res, session, 403, 'The form was sent without this session\'s CSRF token; reload the page and try again.');
      if (path === '/admin/logout') {
        await deps.accounts.logout(session, source);
        return redirect(res, '/admin/login', { 'set-cookie': cookie(SESSION_COOKIE, '', secure, 0) });
      }
    }
    const route = (method === 'POST' ? POST : GET)[path];
    if (route === undefined) return errorPage(res, session, 404, 'No such page.', head);
    if (route.admin && session.role !== 'admin') return errorPage(res, session, 403, 'Your role (editor) may manage news only.', head);
    const ctx: Ctx = { req, res, url, secure, source, session, admin: deps.admin(`console:${session.name}`), form };
    try {
      const page = await route.run(ctx);
      if (page !== null) send(res, res.statusCode === 200 ? 200 : res.statusCode, page, {}, head);
    } catch (error) {
      if (!(error instanceof HttpError)) throw error;
      errorPage(res, session, error.status, error.message, head);
    }
  }

  return {
    async handle(req, res) {
      try {
        await handle(req, res);
      } catch (error) {
        if (error instanceof HttpError) return errorPage(res, null, error.status, error.message);
        throw error;
      }
    },
  };
}

function sameText(a: string, b: string): boolean {
  const x = Buffer.from(a, 'utf8');
  const y = Buffer.from(b, 'utf8');
  return x.length === y.length && timingSafeEqual(x, y);
}

/** The urlencoded body of a POST, at most MAX_FORM_BYTES. */
async function readForm(req: IncomingMessage): Promise<Form> {
  const type = (req.headers['content-type'] ?? '').split(';')[0]?.trim().toLowerCase();
  if (type !== 'application/x-www-form-urlencoded') throw new HttpError(415, 'Forms must be sent as application/x-www-form-urlencoded.');
  const chunks: Buffer[] = [];
  let size = 0;
  for await (const chunk of req as AsyncIterable<Buffer>) {
    size += chunk.length;
    if (size > MAX_FORM_BYTES) throw new HttpError(413, 'The form is too large.');
    chunks.push(chunk);
  }
  return new URLSearchParams(Buffer.concat(chunks).toString('utf8'));
}
