/**
 * Shadow and front modes (docs/cutover.md "Front and shadow"): live traffic compared with the
 * old Authentication.asmx, answer by answer, as `compat check` compares its own requests
 * (src/compat/answer-compare.ts).
 *
 * - **shadow** (`legacy.mode: serve`, `legacy.shadow.rate` > 0): svcapi-auth answers; for a
 *   sampled share of the requests, after the answer has been written, the same request goes to
 *   the old service in the background and the two answers are compared.
 * - **front** (`legacy.mode: front`): the old service answers (the HTTP layer passes the request
 *   on and relays the answer byte for byte); svcapi-auth computes its own answer without sending
 *   it, on a side-effect-free view of the store (src/store/dry-run-store.ts), and the two are
 *   compared the same way.
 *
 * Comparisons wait in a bounded queue (`legacy.shadow.queue` jobs, and MAX_QUEUED_BYTES in all)
 * and run `legacy.shadow.concurrency` at a time; a job that does not fit is dropped and counted.
 * In shadow mode they start in batches (BATCH, or after BATCH_WAIT_MS), sent together.
 * Shadow work has a CPU budget (src/compat/shadow-budget.ts, `legacy.shadow.cpuShare`): the
 * event-loop time it costs is measured, and a sampled request is dropped (and counted) while that
 * time passes the share of the time gone by.
 * Every job ends as one of `same`, `different`, `error` (the old service failed or our own
 * answer could not be computed) or `dropped`, counted by operation and binding from our own
 * dispatch. The last `legacy.shadow.keep` differences are kept in the store, redacted
 * (src/compat/shadow-redaction.ts), for `compat shadow-report`.
 */
import type { IncomingHttpHeaders } from 'node:http';
import { performance } from 'node:perf_hooks';
import type { Logger } from 'pino';
import type { CompatProfile } from '../contract/compat-profile.js';
import { SERVICE_PATH } from '../contract/operations.js';
import { createLegacyForwarder, type ForwardFailure, type ForwardRequest, type ForwardResult, type LegacyForwarder } from '../legacy/legacy-forwarder.js';
import { createPipelinedForwarder } from '../legacy/pipelined-forwarder.js';
import type { ShadowStore } from '../store/store.js';
import { createShadowBudget, type ShadowBudget } from './shadow-budget.js';
import { compareAnswers, sameWithoutNormalising, unifiedDiff, type AnswerSide, type RawAnswer, type RenderedAnswer } from './answer-compare.js';
import { createFingerprinter, CREDENTIAL_NAMES, redactRequest } from './shadow-redaction.js';
import type { FrontOutcome, ShadowOutcome } from './shadow-outcomes.js';

export { SHADOW_OUTCOMES, type FrontOutcome, type ShadowOutcome } from './shadow-outcomes.js';
export { relayedHeaders } from './relayed-headers.js';

/** Operations that change state in the old service: ValidateUser(JSON) issue a token, GetUserLoginURL a ticket. */
export const STATEFUL_OPERATIONS: readonly string[] = ['ValidateUser', 'ValidateUserJSON', 'GetUserLoginURL'];

/** The configuration's `legacy` settings these modes read (src/config/legacy-settings.ts). */
export interface MirrorSettings {
  readonly url: string;
  readonly timeoutMs: number;
  readonly mode: 'serve' | 'front';
  /** Operations answered by the old service in front mode; empty: every request. */
  readonly frontOperations: readonly string[];
  readonly shadow: {
    /** Share of requests compared, 0 to 1. */
    readonly rate: number;
    readonly queue: number;
    readonly concurrency: number;
    readonly keep: number;
    /** Shadow mode only: whether requests that change state in the old service are sent to it too. */
    readonly stateful: boolean;
    readonly maxResponseBytes: number;
    /** Share of the event loop shadow work may use (shadow-budget.ts); 1: no limit. */
    readonly cpuShare: number;
  };
}

/** A client's request as it goes to the old service. */
export type MirroredRequest = ForwardRequest;

export interface ShadowJob {
  readonly mode: 'shadow' | 'front';
  /** From our dispatch (a contract operation name), never from the request text. */
  readonly operation: string | null;
  readonly binding: string;
  readonly request: MirroredRequest;
  /** svcapi-auth's service origin and path as the client reached them (its Host header), normalised away in documentation. */
  readonly oursOrigin: string;
  readonly oursPath: string;
  /** Our answer; in front mode still being computed (null: it could not be). */
  readonly ours: RawAnswer | Promise<RawAnswer | null>;
  /** Front mode: the old service's answer, already received (or the kind of failure). */
  readonly legacy?: ForwardResult;
}

export interface LegacyMirror {
  readonly mode: 'serve' | 'front';
  /**
   * Is this request compared? Sampling at `legacy.shadow.rate`; when we `served` it (shadow),
   * also the stateful rule: unless `legacy.shadow.stateful`, only requests that cannot change
   * state in the old service (a known read-only operation, documentation) are sent to it.
   */
  sample(operation: string | null, binding: string, served: boolean): boolean;
  /** Front mode: does the old service answer this request? */
  fronts(operation: string | null): boolean;
  /** The request as it goes to the old service: its path, the query, the headers that decide the answer, the body. */
  requestOf(method: string, path: string, query: string, headers: IncomingHttpHeaders, body: Uint8Array): MirroredRequest;
  /** Front mode: the request passed on now (bounded; never rejects), counted as forwarded or unavailable. */
  forward(request: MirroredRequest, operation: string | null, binding: string): Promise<ForwardResult>;
  /** Queues a comparison; dropped (and counted) when the queue is full. Never throws. */
  submit(job: ShadowJob): void;
  /** Resolves once nothing is queued or running (tests, shutdown). */
  idle(): Promise<void>;
  /** Comparisons waiting now. */
  depth(): number;
  /** CPU seconds charged to shadow work so far (the budget's count). */
  cpuSeconds(): number;
  /** Stops taking jobs, waits for the running ones (at most the timeout), closes the sockets. */
  close(): Promise<void>;
}

export interface MirrorOptions {
  readonly settings: MirrorSettings;
  /** The compatibility profile: the JSON operations' input names are credentials too, and may come in headers. */
  readonly profile: CompatProfile;
  readonly store: Pick<ShadowStore, 'insertShadowDifference'>;
  /** The fingerprint key (an installation secret, shared by every instance on the database). */
  readonly fingerprintKey: string;
  readonly onResult?: (outcome: ShadowOutcome, operation: string | null, binding: string) => void;
  readonly onFront?: (outcome: FrontOutcome, operation: string | null, binding: string) => void;
  readonly logger?: Logger;
  /** PEM CA for an https old service. */
  readonly ca?: string | Buffer;
  /** For tests: the sampling draw (default Math.random). */
  readonly random?: () => number;
  /** For tests: the CPU budget (default: `legacy.shadow.cpuShare` of a 1 s window, on the event loop's clock). */
  readonly budget?: ShadowBudget;
  /**
   * Shadow mode's exchanges on undici, pipelined (src/legacy/pipelined-forwarder.ts);
   * false: node:http, a socket per exchange (`performance.shadowPipelining`, the off switch).
   */
  readonly pipelining?: boolean;
  /**
   * Answers equal byte for byte are the same without normalising (answer-compare.ts
   * sameWithoutNormalising); false: every answer is normalised and compared in full
   * (`performance.shadowByteCompare`, the off switch).
   */
  readonly byteCompare?: boolean;
  /**
   * Shadow mode's exchanges started in batches: sampled jobs are gathered until BATCH wait or the
   * oldest has waited BATCH_WAIT_MS, then started in one turn (and sent in one write per
   * connection); false: each as soon as it is queued (`performance.shadowBatching`, the off switch).
   */
  readonly batching?: boolean;
  /** For tests: how long the first job of a batch waits for the others (default BATCH_WAIT_MS). */
  readonly batchWaitMs?: number;
}

/** Exchanges started in one turn of the event loop at most: a burst of jobs is spread over turns. */
const STARTS_PER_TURN = 16;
/**
 * Jobs gathered before a batch starts, and the longest the first of them waits for the others.
 * An exchange alone costs its own write to the old service, its own read of the answer and the
 * turns of the event loop they wake: batched, these are shared (bench/shadow-cost.mjs).
 */
export const BATCH = STARTS_PER_TURN;
export const BATCH_WAIT_MS = 20;
/** All queued comparisons together hold at most this many bytes of requests and answers. */
export const MAX_QUEUED_BYTES = 64 * 1024 * 1024;
/** Front mode: exchanges with the old service at a time; one more is answered 503 at once. */
export const FRONT_MAX_IN_FLIGHT = 256;
/** Shadow mode, pipelined: connections to the old service at most (`legacy.shadow.concurrency` exchanges spread over them). */
export const SHADOW_CONNECTIONS = 4;
/** A kept answer or diff is cut to this many characters (the report is for reading). */
const KEPT_TEXT_CHARS = 16 * 1024;
/** Longest time a diff of a kept difference may take (a hostile answer must not hold the event loop). */
const DIFF_TIMEOUT_MS = 50;
/** The headers that decide an ASMX answer, passed on to the old service. */
const FORWARDED_HEADERS = ['content-type', 'soapaction', 'authorization', 'cookie'];
function headerText(value: string | string[] | undefined): string | undefined {
  return Array.isArray(value) ? value.join(', ') : value;
}

function cut(text: string): string {
  return text.length <= KEPT_TEXT_CHARS ? text : `${text.slice(0, KEPT_TEXT_CHARS)}... (${text.length} characters in all)`;
}

const FAILURE_TEXT: Readonly<Record<ForwardFailure, string>> = {
  timeout: 'no complete answer in time',
  'too-large': 'an answer over the size limit',
  connection: 'connection failed',
  tls: 'TLS failed',
  busy: 'too many exchanges in flight',
  unsendable: 'the request cannot be sent',
};

export function createLegacyMirror(options: MirrorOptions): LegacyMirror {
  const { settings, logger } = options;
  const s = settings.shadow;
  const legacyUrl = new URL(settings.url);
  const random = options.random ?? Math.random;
  const fronts = new Set(settings.frontOperations);
  const stateful = new Set(STATEFUL_OPERATIONS);
  const common = { url: settings.url, timeoutMs: settings.timeoutMs, maxResponseBytes: s.maxResponseBytes, ...(options.ca !== undefined && { ca: options.ca }) };
  const budget = options.budget ?? createShadowBudget({ share: s.cpuShare });
  const pipelining = options.pipelining ?? true;
  // Two pools: the background comparisons never take a socket a client of front mode waits for.
  // Front mode's, whose answers clients receive, stays on node:http.
  const shadowForwarder: LegacyForwarder = pipelining
    ? createPipelinedForwarder({ ...common, maxInFlight: s.concurrency, connections: SHADOW_CONNECTIONS, onWork: (ms) => budget.charge(ms) })
    : createLegacyForwarder({ ...common, maxInFlight: s.concurrency });
  const byteCompare = options.byteCompare ?? true;
  // Front mode's jobs send nothing (the old service's answer came with them): started at once.
  const batching = (options.batching ?? true) && settings.mode === 'serve';
  const batchWaitMs = options.batchWaitMs ?? BATCH_WAIT_MS;
  const frontForwarder: LegacyForwarder | null = settings.mode === 'front' ? createLegacyForwarder({ ...common, maxInFlight: FRONT_MAX_IN_FLIGHT }) : null;
  const legacySide: AnswerSide = { url: legacyUrl, path: legacyUrl.pathname };

  // Names that carry credentials: the usual parameters and the profile's JSON inputs.
  const jsonInputs = [options.profile.json.validateUser.inputs, options.profile.json.validateUserToken.inputs];
  const userNames = options.profile.json.validateUser.inputs.names;
  const tokenNames = options.profile.json.validateUserToken.inputs.names;
  const credentialNames = new Set([...CREDENTIAL_NAMES, userNames.login ?? 'login', userNames.password ?? 'password', tokenNames.token ?? 'token'].map((n) => n.toLowerCase()));
  // The JSON operations may read their inputs from headers: those are passed on too.
  const forwarded = [...new Set([...FORWARDED_HEADERS, ...jsonInputs.filter((i) => i.sources.includes('header')).flatMap((i) => Object.values(i.names).map((n) => String(n).toLowerCase()))])];
  const fingerprint = createFingerprinter(options.fingerprintKey);

  const queue: Array<{ job: ShadowJob; bytes: number }> = [];
  let queuedBytes = 0;
  let running = 0;
  let pumpScheduled = false;
  /** Batching: the wait of the first job queued for a batch to fill, or null. */
  let batchTimer: NodeJS.Timeout | null = null;
  let closed = false;
  let idleWaiters: Array<() => void> = [];
  let lastFailure: ForwardFailure | null = null;

  const count = (outcome: ShadowOutcome, job: Pick<ShadowJob, 'operation' | 'binding'>): void => options.onResult?.(outcome, job.operation, job.binding);

  /** Charges the shadow work since `started` (a performance.now() reading) to the budget. */
  const charge = (started: number): void => budget.charge(performance.now() - started);

  /** Logs when the old service stops or starts answering (once per change, not per request). */
  function noteExchange(result: ForwardResult, mode: string): void {
    const failure = result.kind === 'failed' ? result.reason : null;
    if (failure === lastFailure) return;
    if (failure === null) logger?.info({ mode }, 'legacy service answers again');
    else logger?.warn({ mode, reason: failure }, `legacy service: ${FAILURE_TEXT[failure]}`);
    lastFailure = failure;
  }

  function settleIdle(): void {
    if (queue.length > 0 || running > 0) return;
    const waiters = idleWaiters;
    idleWaiters = [];
    for (const w of waiters) w();
  }

  async function keepDifference(job: ShadowJob, legacy: RenderedAnswer, ours: RenderedAnswer): Promise<void> {
    // Charged up to the store's call: its wait for the database is not the event loop's work.
    const started = performance.now();
    const redaction = redactRequest(job.request, credentialNames, fingerprint);
    const shown = (a: RenderedAnswer): RenderedAnswer => ({ status: a.status, headers: a.headers.map((h) => redaction.scrub(h)), body: redaction.scrub(a.body) });
    const [l, o] = [shown(legacy), shown(ours)];
    const diff = unifiedDiff(l, o, DIFF_TIMEOUT_MS);
    const json = (a: RenderedAnswer): string => JSON.stringify({ status: a.status, headers: a.headers, body: cut(a.body) });
    try {
      const inserting = options.store.insertShadowDifference({
        at: new Date(), mode: job.mode, operation: job.operation, binding: job.binding,
        requestJson: JSON.stringify({ ...redaction.request, body: cut(redaction.request.body) }),
        legacyJson: json(l), oursJson: json(o), diff: cut(diff),
      }, s.keep);
      charge(started);
      await inserting;
    } catch (error) {
      // Counted as different all the same; the database's own message carries no request data.
      logger?.warn({ err: { name: (error as Error).name, message: (error as Error).message } }, 'shadow: a difference could not be kept');
    }
  }

  // Full comparisons (and the differences they find: redaction, a diff of up to DIFF_TIMEOUT_MS)
  // run one per turn of the event loop: answers arrive many per read, and a burst of them must
  // not hold the clients' requests back.
  const slowLane: Array<() => void> = [];
  function nextSlow(): void {
    slowLane.shift()?.();
    if (slowLane.length > 0) setImmediate(nextSlow);
  }
  function inSlowLane(): Promise<void> {
    return new Promise<void>((resolve) => {
      slowLane.push(resolve);
      if (slowLane.length === 1) setImmediate(nextSlow);
    });
  }

  // Each stretch of shadow work between two awaits is timed and charged to the budget (the
  // pipelined client charges its own sending and reading).
  async function run(job: ShadowJob): Promise<void> {
    let legacy = job.legacy;
    if (legacy === undefined) {
      // A read-only operation (or documentation) changes nothing in the old service: pipelined, and
      // sent again if its connection closes before the answer; the others never twice.
      const idempotent = job.operation === null ? job.binding === 'doc' : !stateful.has(job.operation);
      const sending = performance.now();
      const exchange = shadowForwarder.forward({ ...job.request, idempotent });
      if (!pipelining) charge(sending);
      legacy = await exchange;
      noteExchange(legacy, 'shadow');
    }
    const ours = await job.ours;
    let started = performance.now();
    if (legacy.kind !== 'answer' || ours === null) {
      count('error', job);
      return charge(started);
    }
    const oursSide: AnswerSide = { url: { origin: job.oursOrigin, host: job.oursOrigin.replace(/^[a-z]+:\/\//, '') }, path: job.oursPath };
    if (byteCompare && sameWithoutNormalising(legacy.answer, ours, [legacySide, oursSide], job.operation ?? undefined)) {
      count('same', job);
      return charge(started);
    }
    charge(started);
    await inSlowLane();
    started = performance.now();
    const compared = compareAnswers(legacy.answer, ours, [legacySide, oursSide], job.operation ?? undefined);
    count(compared.same ? 'same' : 'different', job);
    charge(started);
    if (compared.same) return;
    // Redaction and the diff in a turn of their own.
    await inSlowLane();
    await keepDifference(job, compared.legacy, compared.ours);
  }

  /**
   * Starts what is queued, up to the concurrency. Batching (shadow mode): a batch starts once
   * BATCH jobs wait, or the first has waited BATCH_WAIT_MS (`now`), or everything is being
   * drained (`idle`, close); otherwise the wait is armed.
   */
  function pump(now = false): void {
    if (batching && !now && queue.length < BATCH && !closed && idleWaiters.length === 0) {
      if (queue.length > 0 && batchTimer === null) {
        batchTimer = setTimeout(() => {
          batchTimer = null;
          pump(true);
        }, batchWaitMs);
        batchTimer.unref();
      }
      return;
    }
    if (batchTimer !== null) {
      clearTimeout(batchTimer);
      batchTimer = null;
    }
    let started = 0;
    while (running < s.concurrency && queue.length > 0) {
      if (++started > STARTS_PER_TURN) {
        schedulePump(true);
        return;
      }
      const next = queue.shift();
      if (next === undefined) break;
      queuedBytes -= next.bytes;
      running += 1;
      run(next.job)
        .catch((error: unknown) => {
          count('error', next.job);
          logger?.error({ err: error }, 'shadow: comparison failed');
        })
        .finally(() => {
          running -= 1;
          // A place is free: a full batch waiting starts now, a partial one keeps its wait.
          pump();
          settleIdle();
        });
    }
  }

  /** Not in this turn: the client's answer is flushed before any work of ours starts. */
  function schedulePump(now = false): void {
    if (pumpScheduled) return;
    pumpScheduled = true;
    setImmediate(() => {
      pumpScheduled = false;
      pump(now);
    });
  }

  return {
    mode: settings.mode,
    sample(operation, binding, served) {
      // Every request answered counts: the budget learns what the clients' requests cost.
      budget.served();
      if (s.rate <= 0 || binding === 'none' || closed) return false;
      if (served && !s.stateful) {
        // Only what cannot change state in the old service: a known read-only operation, or documentation.
        if (operation === null ? binding !== 'doc' : stateful.has(operation)) return false;
      }
      if (s.rate < 1 && random() >= s.rate) return false;
      // Sampled, but shadow work has used its share of the event loop: not compared (and, in
      // front mode, our own answer not even computed).
      if (!budget.admit()) {
        count('dropped', { operation, binding });
        return false;
      }
      return true;
    },
    fronts(operation) {
      if (settings.mode !== 'front') return false;
      return fronts.size === 0 || (operation !== null && fronts.has(operation));
    },
    requestOf(method, path, query, headers, body) {
      const suffix = path.slice(SERVICE_PATH.length);
      const target = `${legacyUrl.pathname}${encodeURI(suffix)}${query === '' ? '' : `?${query}`}`;
      const picked: Record<string, string> = {};
      for (const name of forwarded) {
        const value = headerText(headers[name]);
        if (value !== undefined) picked[name] = value;
      }
      return { method, target, headers: picked, body };
    },
    async forward(request, operation, binding) {
      const result = await (frontForwarder ?? shadowForwarder).forward(request);
      noteExchange(result, 'front');
      options.onFront?.(result.kind === 'answer' ? 'forwarded' : 'unavailable', operation, binding);
      return result;
    },
    submit(job) {
      const oursBytes = 'body' in job.ours ? job.ours.body.byteLength : 0;
      const bytes = job.request.body.byteLength + oursBytes + (job.legacy?.kind === 'answer' ? job.legacy.answer.body.byteLength : 0);
      if (closed || queue.length >= s.queue || queuedBytes + bytes > MAX_QUEUED_BYTES) {
        // A job dropped still has our pending answer (front mode): nothing waits on it.
        if (!('body' in job.ours)) job.ours.catch(() => undefined);
        return count('dropped', job);
      }
      queue.push({ job, bytes });
      queuedBytes += bytes;
      schedulePump();
    },
    idle() {
      return new Promise<void>((resolve) => {
        idleWaiters.push(resolve);
        // A batch still gathering starts now rather than at the end of its wait.
        if (queue.length > 0) schedulePump(true);
        settleIdle();
      });
    },
    depth: () => queue.length,
    cpuSeconds: () => budget.spent() / 1000,
    async close() {
      closed = true;
      if (batchTimer !== null) clearTimeout(batchTimer);
      batchTimer = null;
      for (const { job } of queue.splice(0)) count('dropped', job);
      queuedBytes = 0;
      const done = this.idle();
      await Promise.race([done, new Promise((resolve) => setTimeout(resolve, settings.timeoutMs + 100).unref())]);
      shadowForwarder.close();
      frontForwarder?.close();
    },
  };
}
