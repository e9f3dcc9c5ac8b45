/**
 * A whole service for the console tests: the public listener (SOAP and friends) and the
 * management listener with the admin console mounted, on one SQLite store, wired as serve does
 * (wireConsole), with every log line captured so tests can grep them for secrets.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Writable } from 'node:stream';
import pino from 'pino';
import { wireConsole } from '../../src/console/console-wiring.js';
import type { NewsTableProfile } from '../../src/contract/compat-profile.js';
import { createAdminAccounts } from '../../src/domain/admin-accounts.js';
import { createAdminService, type AdminService } from '../../src/domain/admin-service.js';
import { DEFAULT_THROTTLE_POLICY, type ThrottlePolicy } from '../../src/domain/login-throttle.js';
import { createArgon2Hasher } from '../../src/domain/password-hasher.js';
import { createAuthService } from '../../src/domain/create-auth-service.js';
import { buildApp, type AsmxApp } from '../../src/http/app.js';
import { createOpsRuntime, type OpsRuntime } from '../../src/ops/runtime.js';
import { openStore } from '../../src/store/open-store.js';
import type { AdminRole, Store } from '../../src/store/store.js';

export interface ConsoleWorld {
  readonly store: Store;
  readonly admin: AdminService;
  /** http://127.0.0.1:port/Authentication.asmx */
  readonly service: string;
  /** http://127.0.0.1:port of the management listener. */
  readonly management: string;
  addAccount(name: string, password: string, role: AdminRole): Promise<void>;
  /** Everything logged so far. */
  logs(): string;
  /** Writes what the audit trail holds to the store now (it writes in batches every 100 ms). */
  flushAudit(): Promise<void>;
  close(): Promise<void>;
}

/** A throttle that blocks a pair after three failures (the service's default is five). */
export const TEST_THROTTLE: ThrottlePolicy = { ...DEFAULT_THROTTLE_POLICY, pair: { maxAttempts: 3, baseDelayMs: 60_000 } };

export async function startConsoleWorld(options: { readonly newsTable?: NewsTableProfile } = {}): Promise<ConsoleWorld> {
  const dir = mkdtempSync(join(tmpdir(), 'svcapi-console-'));
  let logText = '';
  const logger = pino({ level: 'debug' }, new Writable({
    write(chunk: Buffer | string, _encoding, callback) {
      logText += chunk.toString();
      callback();
    },
  }));
  const store = await openStore(`sqlite:${join(dir, 'auth.db')}`);
  let ops: OpsRuntime | undefined;
  let app: AsmxApp | undefined;
  try {
    ops = await createOpsRuntime({
      config: {
        management: { host: '127.0.0.1', port: 0 },
        shutdown: { drainDelayMs: 0, timeoutMs: 5000 },
        housekeeping: { intervalMs: 3_600_000, batchSize: 100, batchBudgetMs: 0, tokenRetentionMs: 0 },
      },
      store, logger,
    });
    const hasher = ops.hasher(createArgon2Hasher());
    const audit = ops.audit;
    const service = createAuthService({ store, hasher, events: ops.events, throttle: TEST_THROTTLE });
    app = await buildApp({
      service, config: { http: { maxRequestBytes: 1 << 20, bodyTimeoutMs: 10_000 }, timeZone: 'UTC' }, logger,
      onRequestDone: ops.metrics.observeRequest, draining: ops.draining,
    });
    const base = `${await app.listen({ host: '127.0.0.1', port: 0 })}/Authentication.asmx`;
    const handler = wireConsole({
      store, hasher, audit: (e) => audit.record(e), throttle: TEST_THROTTLE, timeZone: 'UTC',
      sessions: { idleTimeoutMs: 30 * 60_000, absoluteTimeoutMs: 12 * 3_600_000 }, registry: ops.metrics.registry, logger,
      ...(options.newsTable !== undefined && { newsTable: options.newsTable }),
    });
    const { managementUrl } = await ops.start({ console: handler });
    const accounts = createAdminAccounts({ store, hasher });
    const runningOps = ops;
    const runningApp = app;
    return {
      store,
      admin: createAdminService({ store, hasher }),
      service: base,
      management: managementUrl ?? '',
      async addAccount(name, password, role) {
        const r = await accounts.add(name, password, role);
        if (!r.ok) throw new Error(r.message);
      },
      logs: () => logText,
      flushAudit: () => runningOps.audit.flush(),
      async close() {
        await runningApp.close();
        await runningOps.close();
        await store.close();
        rmSync(dir, { recursive: true, force: true });
      },
    };
  } catch (error) {
    await app?.close();
    await ops?.close();
    await store.close();
    rmSync(dir, { recursive: true, force: true });
    throw error;
  }
}

/** A browser-like client of the console: keeps cookies, never follows redirects. */
export class ConsoleClient {
  readonly cookies = new Map<string, string>();
  constructor(readonly base: string) {}

  async request(path: string, init: { method?: string; form?: Record<string, string | readonly string[]>; headers?: Record<string, string> } = {}): Promise<Response> {
    const headers: Record<string, string> = { ...init.headers };
    if (this.cookies.size > 0) headers.cookie = [...this.cookies].map(([k, v]) => `${k}=${v}`).join('; ');
    let body: string | undefined;
    if (init.form !== undefined) {
      const params = new URLSearchParams();
      for (const [k, v] of Object.entries(init.form)) for (const one of typeof v === 'string' ? [v] : v) params.append(k, one);
      body = params.toString();
      headers['content-type'] = 'application/x-www-form-urlencoded';
    }
    const res = await fetch(`${this.base}${path}`, { method: init.method ?? (body === undefined ? 'GET' : 'POST'), headers, body, redirect: 'manual' });
    for (const line of res.headers.getSetCookie()) {
      const [pair] = line.split(';');
      const eq = (pair ?? '').indexOf('=');
      const name = (pair ?? '').slice(0, eq);
      const value = (pair ?? '').slice(eq + 1);
      if (value === '' || /max-age=0/i.test(line)) this.cookies.delete(name);
      else this.cookies.set(name, value);
    }
    return res;
  }

  async text(path: string): Promise<string> {
    return (await this.request(path)).text();
  }

  /** The CSRF token of the first form on a page. */
  async csrf(path = '/admin/'): Promise<string> {
    const page = await this.text(path);
    const m = /name="csrf" value="([^"]+)"/.exec(page);
    if (m?.[1] === undefined) throw new Error(`no CSRF token on ${path}`);
    return m[1];
  }

  async login(name: string, password: string): Promise<Response> {
    const csrf = await this.csrf('/admin/login');
    return this.request('/admin/login', { form: { csrf, name, password } });
  }

  async post(path: string, form: Record<string, string | readonly string[]>, csrf?: string): Promise<Response> {
    return this.request(path, { form: { ...form, csrf: csrf ?? await this.csrf() } });
  }
}
