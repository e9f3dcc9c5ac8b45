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
 * Comparisons wait in a bounded queue (`legacy.shadow.queue` jobs, and MAX_QUEUED_BYTES in all),
 * kept here on the event loop: a job that does not fit is dropped and counted at once. They run
 * on the shadow thread (shadow-thread.ts, `performance.shadowThread`), `legacy.shadow.concurrency`
 * at a time, at a nice level below the event loop's: the kernel gives that thread the cores'
 * idle time and, under load, about `legacy.shadow.cpuShare` of a busy core (niceForShare). Under
 * load its jobs wait, the queue fills, and sampled requests are dropped (and counted) for the
 * cost of a counter. All the event loop does per compared request is copy the request and our
 * answer into the batch it posts once per turn.
 * Every job ends as one of `same`, `different`, `error` (the old service failed or our own
 * answer could not be computed) or `dropped`, counted by operation and binding from our own
 * dispatch. The last `legacy.shadow.keep` differences are kept in the store, redacted
 * (src/compat/shadow-redaction.ts), for `compat shadow-report`.
 */
import type { IncomingHttpHeaders } from 'node:http';
import { Worker } from 'node:worker_threads';
import type { Logger } from 'pino';
import type { CompatProfile } from '../contract/compat-profile.js';
import { SERVICE_PATH } from '../contract/operations.js';
import { createLegacyForwarder, type ForwardFailure, type ForwardRequest, type ForwardResult, type LegacyForwarder } from '../legacy/legacy-forwarder.js';
import type { ShadowStore } from '../store/store.js';
import type { RawAnswer } from './answer-compare.js';
import { BATCH_WAIT_MS, createShadowComparer, FORWARD_FAILURE_TEXT, STATEFUL_OPERATIONS, type ComparedJob, type ComparerSettings } from './shadow-comparer.js';
import { CREDENTIAL_NAMES } from './shadow-redaction.js';
import type { FrontOutcome, ShadowOutcome } from './shadow-outcomes.js';
import type { FromThread, ThreadData, ThreadJob, ToThread } from './shadow-thread.js';

export { SHADOW_OUTCOMES, type FrontOutcome, type ShadowOutcome } from './shadow-outcomes.js';
export { relayedHeaders } from './relayed-headers.js';
export { BATCH, BATCH_WAIT_MS, SHADOW_CONNECTIONS, STATEFUL_OPERATIONS } from './shadow-comparer.js';

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
    /** Share of a busy core the shadow thread gets (niceForShare); 1: the event loop's priority. */
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
   * A sampled request the queue has no room for is dropped (and counted) here.
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
  /** Resolves once nothing is queued or running, and every difference found is kept (tests, shutdown). */
  idle(): Promise<void>;
  /** Comparisons submitted and not yet ended. */
  depth(): number;
  /** CPU seconds the comparisons have taken: the shadow thread's busy time (with the thread off, their timed stretches). */
  cpuSeconds(): number;
  /** Stops taking jobs, waits for the running ones (at most the timeout), closes the sockets and the thread. */
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
  /**
   * The comparisons on the shadow thread, at a lower CPU priority (shadow-thread.ts); false: on
   * the event loop, with no CPU limit but the queue's (`performance.shadowThread`, the off switch).
   */
  readonly thread?: boolean;
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
   * Shadow mode's exchanges started in batches (shadow-comparer.ts); false: each as soon as it is
   * queued (`performance.shadowBatching`, the off switch).
   */
  readonly batching?: boolean;
  /** For tests: how long the first job of a batch waits for the others (default BATCH_WAIT_MS). */
  readonly batchWaitMs?: number;
}

/** All queued comparisons together hold at most this many bytes of requests and answers. */
export const MAX_QUEUED_BYTES = 64 * 1024 * 1024;
/** Front mode: exchanges with the old service at a time; one more is answered 503 at once. */
export const FRONT_MAX_IN_FLIGHT = 256;
/** The shadow thread's heap at most (MiB): the queue's bytes, the answers in flight and the comparisons' garbage fit well under it. */
const THREAD_HEAP_MIB = 256;
/** After the shadow thread died, the earliest a new one starts (ms). */
const THREAD_RESTART_MS = 1000;
/** The headers that decide an ASMX answer, passed on to the old service. */
const FORWARDED_HEADERS = ['content-type', 'soapaction', 'authorization', 'cookie'];
function headerText(value: string | string[] | undefined): string | undefined {
  return Array.isArray(value) ? value.join(', ') : value;
}

/**
 * The CFS weights of nice 0 to 19 (kernel/sched/core.c sched_prio_to_weight): a thread of weight
 * w beside one of nice 0 wanting the same core gets w / (1024 + w) of it.
 */
const NICE_WEIGHTS = [1024, 820, 655, 526, 423, 335, 272, 215, 172, 137, 110, 87, 70, 56, 45, 36, 29, 23, 18, 15];

/** How many nice levels below the event loop's give the shadow thread at most `share` of a busy core (0.03: 16; 1: 0). */
export function niceForShare(share: number): number {
  if (share >= 0.5) return 0;
  const n = NICE_WEIGHTS.findIndex((w) => w / (1024 + w) <= share);
  return n === -1 ? NICE_WEIGHTS.length - 1 : n;
}

/** Where the comparisons run: the shadow thread, or (thread off) this event loop. */
interface ComparerLink {
  post(jobs: ThreadJob[]): void;
  idle(): Promise<void>;
  close(timeoutMs: number): Promise<void>;
  busyMs(): number;
}

/** The shadow thread's file: from the TypeScript sources (tests), the build of the same file (test/global-setup.ts makes it). */
function threadFile(): URL {
  return import.meta.url.endsWith('.ts') ? new URL('../../dist/compat/shadow-thread.js', import.meta.url) : new URL('./shadow-thread.js', import.meta.url);
}

/** A copy of bytes in an ArrayBuffer of their own (a Buffer may be a view of a shared pool, which structured clone would copy whole): transferred, not copied again. */
function ownBytes(bytes: Uint8Array, transfer: ArrayBuffer[]): Uint8Array {
  const copy = new Uint8Array(bytes);
  transfer.push(copy.buffer);
  return copy;
}

function portable(job: ComparedJob, transfer: ArrayBuffer[]): ComparedJob {
  const answer = (a: RawAnswer): RawAnswer => ({ ...a, body: ownBytes(a.body, transfer) as Buffer });
  return {
    ...job,
    request: { ...job.request, body: ownBytes(job.request.body, transfer) },
    ours: job.ours === null ? null : answer(job.ours),
    ...(job.legacy?.kind === 'answer' && { legacy: { kind: 'answer', answer: answer(job.legacy.answer) } }),
  };
}

export function createLegacyMirror(options: MirrorOptions): LegacyMirror {
  const { settings, logger } = options;
  const s = settings.shadow;
  const legacyUrl = new URL(settings.url);
  const random = options.random ?? Math.random;
  const fronts = new Set(settings.frontOperations);
  const stateful = new Set(STATEFUL_OPERATIONS);
  // Front mode's own exchanges, whose answers clients receive, stay here on node:http.
  const frontForwarder: LegacyForwarder | null = settings.mode === 'front'
    ? createLegacyForwarder({ url: settings.url, timeoutMs: settings.timeoutMs, maxResponseBytes: s.maxResponseBytes, maxInFlight: FRONT_MAX_IN_FLIGHT, ...(options.ca !== undefined && { ca: options.ca }) })
    : null;

  // Names that carry credentials: the usual parameters and the profile's JSON inputs.
  const jsonInputs = [options.profile.json.validateUser.inputs, options.profile.json.validateUserToken.inputs];
  const userNames = options.profile.json.validateUser.inputs.names;
  const tokenNames = options.profile.json.validateUserToken.inputs.names;
  const credentialNames = [...new Set([...CREDENTIAL_NAMES, userNames.login ?? 'login', userNames.password ?? 'password', tokenNames.token ?? 'token'].map((n) => n.toLowerCase()))];
  // The JSON operations may read their inputs from headers: those are passed on too.
  const forwarded = [...new Set([...FORWARDED_HEADERS, ...jsonInputs.filter((i) => i.sources.includes('header')).flatMap((i) => Object.values(i.names).map((n) => String(n).toLowerCase()))])];

  const comparerSettings: ComparerSettings = {
    url: settings.url, timeoutMs: settings.timeoutMs, mode: settings.mode, concurrency: s.concurrency, maxResponseBytes: s.maxResponseBytes,
    fingerprintKey: options.fingerprintKey, credentialNames, ...(options.ca !== undefined && { ca: options.ca }),
    pipelining: options.pipelining ?? true, byteCompare: options.byteCompare ?? true, batching: options.batching ?? true, batchWaitMs: options.batchWaitMs ?? BATCH_WAIT_MS,
  };

  /** Jobs submitted and not yet ended: what the outcome is counted as, and the bytes they hold. */
  const inFlight = new Map<number, { operation: string | null; binding: string; bytes: number }>();
  let nextId = 0;
  let queuedBytes = 0;
  let closed = false;
  /** Jobs waiting for our answer (front mode), and differences being written to the store. */
  const pending = new Set<Promise<unknown>>();
  /** Jobs for the comparer, posted together once per turn. */
  let outbox: ThreadJob[] = [];
  let flushScheduled = false;

  const count = (outcome: ShadowOutcome, job: { operation: string | null; binding: string }): void => options.onResult?.(outcome, job.operation, job.binding);

  function ended(id: number, outcome: ShadowOutcome): void {
    const job = inFlight.get(id);
    if (job === undefined) return;
    inFlight.delete(id);
    queuedBytes -= job.bytes;
    count(outcome, job);
  }

  function keep(difference: Parameters<ShadowStore['insertShadowDifference']>[0]): void {
    const inserting = options.store.insertShadowDifference(difference, s.keep).catch((error: unknown) => {
      // Counted as different all the same; the database's own message carries no request data.
      logger?.warn({ err: { name: (error as Error).name, message: (error as Error).message } }, 'shadow: a difference could not be kept');
    });
    pending.add(inserting);
    void inserting.finally(() => pending.delete(inserting));
  }

  function log(level: 'info' | 'warn' | 'error', fields: Record<string, unknown>, message: string): void {
    logger?.[level](fields, message);
  }

  const link: ComparerLink = options.thread ?? true ? threadLink() : inlineLink();

  /** The comparer on this event loop (the thread switched off). */
  function inlineLink(): ComparerLink {
    const ids = new Map<ComparedJob, number>();
    let busy = 0;
    const comparer = createShadowComparer(comparerSettings, {
      result(outcome, job) {
        const id = ids.get(job);
        ids.delete(job);
        if (id !== undefined) ended(id, outcome);
      },
      difference: keep,
      log,
      work: (ms) => {
        busy += ms;
      },
    });
    return {
      post(jobs) {
        for (const { id, job } of jobs) {
          ids.set(job, id);
          comparer.submit(job);
        }
      },
      idle: () => comparer.idle(),
      close: (timeoutMs) => comparer.close(timeoutMs),
      busyMs: () => busy,
    };
  }

  /** The comparer on the shadow thread, started at the first job and again after it died. */
  function threadLink(): ComparerLink {
    let worker: Worker | null = null;
    let busy = 0;
    let diedAt = -Infinity;
    let nextWait = 0;
    const waiting = new Map<number, () => void>();
    let closing: (() => void) | null = null;

    function died(reason: string): void {
      worker = null;
      diedAt = Date.now();
      log('error', { reason }, 'shadow: the comparison thread stopped; its comparisons count as errors');
      for (const id of [...inFlight.keys()]) ended(id, 'error');
      for (const w of waiting.values()) w();
      waiting.clear();
      closing?.();
    }

    function started(): Worker | null {
      if (worker !== null) return worker;
      if (closed || Date.now() - diedAt < THREAD_RESTART_MS) return null;
      const data: ThreadData = { settings: comparerSettings, niceBelow: niceForShare(s.cpuShare) };
      const w = new Worker(threadFile(), { workerData: data, resourceLimits: { maxOldGenerationSizeMb: THREAD_HEAP_MIB }, stdout: false, stderr: false });
      // An idle thread never keeps the process alive.
      w.unref();
      w.on('message', (message: FromThread) => {
        if (message.kind === 'report') {
          busy = message.busyMs;
          for (const [id, outcome] of message.results) ended(id, outcome);
        } else if (message.kind === 'difference') keep(message.difference);
        else if (message.kind === 'log') log(message.level, message.fields, message.message);
        else if (message.kind === 'idle') {
          waiting.get(message.id)?.();
          waiting.delete(message.id);
        } else closing?.();
      });
      // Its error carries no request data: a thread's own failure (out of memory, a bug).
      w.on('error', (error) => died(error.name === 'Error' ? error.message : error.name));
      w.on('exit', (code) => {
        if (worker === w) died(`exit code ${code}`);
      });
      worker = w;
      return w;
    }

    return {
      post(jobs) {
        const w = started();
        if (w === null) {
          for (const { id } of jobs) ended(id, 'error');
          return;
        }
        const transfer: ArrayBuffer[] = [];
        const message: ToThread = { kind: 'jobs', jobs: jobs.map(({ id, job }) => ({ id, job: portable(job, transfer) })) };
        w.postMessage(message, transfer);
      },
      idle() {
        if (worker === null) return Promise.resolve();
        const w = worker;
        return new Promise<void>((resolve) => {
          const id = nextWait++;
          waiting.set(id, resolve);
          w.postMessage({ kind: 'idle', id } satisfies ToThread);
        });
      },
      async close(timeoutMs) {
        const w = worker;
        if (w === null) return;
        await Promise.race([
          new Promise<void>((resolve) => {
            closing = resolve;
            w.postMessage({ kind: 'close', timeoutMs } satisfies ToThread);
          }),
          new Promise((resolve) => setTimeout(resolve, timeoutMs + 500).unref()),
        ]);
        worker = null;
        await w.terminate();
      },
      busyMs: () => busy,
    };
  }

  function flush(): void {
    flushScheduled = false;
    if (outbox.length === 0) return;
    const jobs = outbox;
    outbox = [];
    link.post(jobs);
  }

  function enqueue(id: number, job: ComparedJob): void {
    outbox.push({ id, job });
    // Not in this turn: the client's answer is written first, and the turn's jobs go together.
    if (!flushScheduled) {
      flushScheduled = true;
      setImmediate(flush);
    }
  }

  /** Front mode: logs when the old service stops or starts answering (once per change, not per request). */
  let lastFrontFailure: ForwardFailure | null = null;
  function noteFront(result: ForwardResult): void {
    const failure = result.kind === 'failed' ? result.reason : null;
    if (failure === lastFrontFailure) return;
    if (failure === null) logger?.info({ mode: 'front' }, 'legacy service answers again');
    else logger?.warn({ mode: 'front', reason: failure }, `legacy service: ${FORWARD_FAILURE_TEXT[failure]}`);
    lastFrontFailure = failure;
  }

  return {
    mode: settings.mode,
    sample(operation, binding, served) {
      if (s.rate <= 0 || binding === 'none' || closed) return false;
      if (served && !s.stateful) {
        // Only what cannot change state in the old service: a known read-only operation, or documentation.
        if (operation === null ? binding !== 'doc' : stateful.has(operation)) return false;
      }
      if (s.rate < 1 && random() >= s.rate) return false;
      // Sampled, but the comparisons are behind (the thread has the cores' leftovers only): not
      // compared (and, in front mode, our own answer not even computed).
      if (inFlight.size >= s.queue) {
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
      if (frontForwarder === null) throw new Error('forward() is for front mode');
      const result = await frontForwarder.forward(request);
      noteFront(result);
      options.onFront?.(result.kind === 'answer' ? 'forwarded' : 'unavailable', operation, binding);
      return result;
    },
    submit(job) {
      const oursBytes = 'body' in job.ours ? job.ours.body.byteLength : 0;
      const bytes = job.request.body.byteLength + oursBytes + (job.legacy?.kind === 'answer' ? job.legacy.answer.body.byteLength : 0);
      if (closed || inFlight.size >= s.queue || queuedBytes + bytes > MAX_QUEUED_BYTES) {
        // A job dropped still has our pending answer (front mode): nothing waits on it.
        if (!('body' in job.ours)) job.ours.catch(() => undefined);
        return count('dropped', job);
      }
      const id = nextId++;
      inFlight.set(id, { operation: job.operation, binding: job.binding, bytes });
      queuedBytes += bytes;
      const { ours, ...rest } = job;
      if ('body' in ours) return enqueue(id, { ...rest, ours });
      const computing = ours.then(
        (answer) => enqueue(id, { ...rest, ours: answer }),
        () => enqueue(id, { ...rest, ours: null }),
      );
      pending.add(computing);
      void computing.finally(() => pending.delete(computing));
    },
    async idle() {
      // Our answers still being computed are posted as they come; differences found are kept.
      for (;;) {
        await Promise.all([...pending]);
        flush();
        await link.idle();
        if (pending.size === 0 && outbox.length === 0) return;
      }
    },
    depth: () => inFlight.size,
    cpuSeconds: () => link.busyMs() / 1000,
    async close() {
      closed = true;
      await Promise.race([Promise.all([...pending]), new Promise((resolve) => setTimeout(resolve, settings.timeoutMs).unref())]);
      flush();
      await link.close(settings.timeoutMs + 100);
      // What never came back (the thread did not finish in time) ends dropped.
      for (const id of [...inFlight.keys()]) ended(id, 'dropped');
      await Promise.all([...pending]);
      frontForwarder?.close();
    },
  };
}
