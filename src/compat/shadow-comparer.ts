/**
 * The comparing half of shadow and front modes (src/compat/shadow.ts): jobs in, outcomes out.
 * It asks the old service (shadow mode), compares its answer with ours as `compat check` does
 * (answer-compare.ts), and hands each difference, redacted (shadow-redaction.ts), to be kept.
 *
 * It runs on the shadow thread (shadow-thread.ts; `performance.shadowThread`) or, with that off,
 * on the event loop; either way it touches no store and no socket of the clients': what it
 * finds leaves through `ComparerEvents`, which the thread turns into messages.
 *
 * Jobs run `legacy.shadow.concurrency` at a time. In shadow mode they start in batches (BATCH, or
 * after BATCH_WAIT_MS), sent together: an exchange alone costs its own write to the old service,
 * its own read of the answer and the turns of the event loop they wake; batched, these are
 * shared (bench/shadow-cost.mjs). The queue's bounds (jobs and bytes) are kept by the side that
 * submits, which counts what it drops.
 */
import { performance } from 'node:perf_hooks';
import { createLegacyForwarder, type ForwardFailure, type ForwardRequest, type ForwardResult, type LegacyForwarder } from '../legacy/legacy-forwarder.js';
import { createPipelinedForwarder } from '../legacy/pipelined-forwarder.js';
import type { NewShadowDifference } from '../store/store.js';
import { compareAnswers, sameWithoutNormalising, unifiedDiff, type AnswerSide, type RawAnswer, type RenderedAnswer } from './answer-compare.js';
import { createFingerprinter, redactRequest } from './shadow-redaction.js';
import type { ShadowOutcome } from './shadow-outcomes.js';

/** Operations that change state in the old service: ValidateUser(JSON) issue a token, GetUserLoginURL a ticket. */
export const STATEFUL_OPERATIONS: readonly string[] = ['ValidateUser', 'ValidateUserJSON', 'GetUserLoginURL'];

/** A comparison to make: plain data (it crosses to the shadow thread by structured clone). */
export interface ComparedJob {
  readonly mode: 'shadow' | 'front';
  /** From our dispatch (a contract operation name), never from the request text. */
  readonly operation: string | null;
  readonly binding: string;
  readonly request: ForwardRequest;
  /** svcapi-auth's service origin and path as the client reached them (its Host header), normalised away in documentation. */
  readonly oursOrigin: string;
  readonly oursPath: string;
  /** Our answer (null: it could not be computed). */
  readonly ours: RawAnswer | null;
  /** Front mode: the old service's answer, already received (or the kind of failure). */
  readonly legacy?: ForwardResult;
}

/** What the comparer needs to know: plain data too. */
export interface ComparerSettings {
  readonly url: string;
  readonly timeoutMs: number;
  readonly mode: 'serve' | 'front';
  readonly concurrency: number;
  readonly maxResponseBytes: number;
  /** The fingerprint key (an installation secret): credentials in kept differences become fingerprints. */
  readonly fingerprintKey: string;
  /** Parameter names that carry credentials, lower-cased (shadow-redaction.ts). */
  readonly credentialNames: readonly string[];
  /** PEM CA for an https old service. */
  readonly ca?: string | Uint8Array;
  /** Exchanges on undici, pipelined (`performance.shadowPipelining`); false: node:http, a socket per exchange. */
  readonly pipelining: boolean;
  /** Answers equal byte for byte are the same without normalising (`performance.shadowByteCompare`). */
  readonly byteCompare: boolean;
  /** Shadow mode's exchanges started in batches (`performance.shadowBatching`). */
  readonly batching: boolean;
  /** How long the first job of a batch waits for the others (BATCH_WAIT_MS). */
  readonly batchWaitMs: number;
}

export interface ComparerEvents {
  /** A job ended (every job submitted ends once). */
  result(outcome: ShadowOutcome, job: ComparedJob): void;
  /** A difference to keep (already redacted). */
  difference(difference: NewShadowDifference): void;
  log(level: 'info' | 'warn' | 'error', fields: Record<string, unknown>, message: string): void;
  /** A stretch of comparing work took this many milliseconds (timed around it). */
  work?(ms: number): void;
}

export interface ShadowComparer {
  submit(job: ComparedJob): void;
  /** Resolves once nothing is queued or running. */
  idle(): Promise<void>;
  /** Drops what waits (counted), waits for the running jobs (at most `timeoutMs`), closes the sockets. */
  close(timeoutMs: number): Promise<void>;
}

/** Exchanges started in one turn of the event loop at most: a burst of jobs is spread over turns. */
const STARTS_PER_TURN = 16;
/** Jobs gathered before a batch starts, and the longest the first of them waits for the others. */
export const BATCH = STARTS_PER_TURN;
export const BATCH_WAIT_MS = 20;
/** Shadow mode, pipelined: connections to the old service at most (`legacy.shadow.concurrency` exchanges spread over them). */
export const SHADOW_CONNECTIONS = 4;
/** A kept answer or diff is cut to this many characters (the report is for reading). */
const KEPT_TEXT_CHARS = 16 * 1024;
/** Longest time a diff of a kept difference may take (a hostile answer must not hold the thread). */
const DIFF_TIMEOUT_MS = 50;

/** A failure of an exchange with the old service, as the log says it. */
export const FORWARD_FAILURE_TEXT: Readonly<Record<ForwardFailure, string>> = {
  timeout: 'no complete answer in time',
  'too-large': 'an answer over the size limit',
  connection: 'connection failed',
  tls: 'TLS failed',
  busy: 'too many exchanges in flight',
  unsendable: 'the request cannot be sent',
};

function cut(text: string): string {
  return text.length <= KEPT_TEXT_CHARS ? text : `${text.slice(0, KEPT_TEXT_CHARS)}... (${text.length} characters in all)`;
}

/** Structured clone turns a Buffer into a plain Uint8Array: the comparison reads Buffers. */
function asBuffer(bytes: Uint8Array): Buffer {
  return Buffer.isBuffer(bytes) ? bytes : Buffer.from(bytes.buffer, bytes.byteOffset, bytes.byteLength);
}
function rawAnswerOf(answer: RawAnswer): RawAnswer {
  return Buffer.isBuffer(answer.body) ? answer : { ...answer, body: asBuffer(answer.body) };
}

export function createShadowComparer(settings: ComparerSettings, events: ComparerEvents): ShadowComparer {
  const legacyUrl = new URL(settings.url);
  const work = events.work ?? ((): void => undefined);
  const common = { url: settings.url, timeoutMs: settings.timeoutMs, maxResponseBytes: settings.maxResponseBytes, ...(settings.ca !== undefined && { ca: typeof settings.ca === 'string' ? settings.ca : asBuffer(settings.ca) }) };
  const forwarder: LegacyForwarder = settings.pipelining
    ? createPipelinedForwarder({ ...common, maxInFlight: settings.concurrency, connections: SHADOW_CONNECTIONS, onWork: work })
    : createLegacyForwarder({ ...common, maxInFlight: settings.concurrency });
  // Front mode's jobs send nothing (the old service's answer came with them): started at once.
  const batching = settings.batching && settings.mode === 'serve';
  const legacySide: AnswerSide = { url: legacyUrl, path: legacyUrl.pathname };
  const credentialNames = new Set(settings.credentialNames);
  const fingerprint = createFingerprinter(settings.fingerprintKey);
  const stateful = new Set(STATEFUL_OPERATIONS);

  const queue: ComparedJob[] = [];
  let running = 0;
  let pumpScheduled = false;
  /** Batching: the wait of the first job queued for a batch to fill, or null. */
  let batchTimer: NodeJS.Timeout | null = null;
  let closed = false;
  let idleWaiters: Array<() => void> = [];
  let lastFailure: ForwardFailure | null = null;

  const count = (outcome: ShadowOutcome, job: ComparedJob): void => events.result(outcome, job);
  /** Times the comparing work since `started` (a performance.now() reading). */
  const timed = (started: number): void => work(performance.now() - started);

  /** Logs when the old service stops or starts answering (once per change, not per request). */
  function noteExchange(result: ForwardResult): void {
    const failure = result.kind === 'failed' ? result.reason : null;
    if (failure === lastFailure) return;
    if (failure === null) events.log('info', { mode: 'shadow' }, 'legacy service answers again');
    else events.log('warn', { mode: 'shadow', reason: failure }, `legacy service: ${FORWARD_FAILURE_TEXT[failure]}`);
    lastFailure = failure;
  }

  function settleIdle(): void {
    if (queue.length > 0 || running > 0) return;
    const waiters = idleWaiters;
    idleWaiters = [];
    for (const w of waiters) w();
  }

  function keepDifference(job: ComparedJob, legacy: RenderedAnswer, ours: RenderedAnswer): void {
    const redaction = redactRequest(job.request, credentialNames, fingerprint);
    const shown = (a: RenderedAnswer): RenderedAnswer => ({ status: a.status, headers: a.headers.map((h) => redaction.scrub(h)), body: redaction.scrub(a.body) });
    const [l, o] = [shown(legacy), shown(ours)];
    const diff = unifiedDiff(l, o, DIFF_TIMEOUT_MS);
    const json = (a: RenderedAnswer): string => JSON.stringify({ status: a.status, headers: a.headers, body: cut(a.body) });
    events.difference({
      at: new Date(), mode: job.mode, operation: job.operation, binding: job.binding,
      requestJson: JSON.stringify({ ...redaction.request, body: cut(redaction.request.body) }),
      legacyJson: json(l), oursJson: json(o), diff: cut(diff),
    });
  }

  // Full comparisons (and the differences they find: redaction, a diff of up to DIFF_TIMEOUT_MS)
  // run one per turn of the event loop: answers arrive many per read, and a burst of them must
  // not hold the rest back (with the thread off, the clients' requests).
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

  async function run(job: ComparedJob): Promise<void> {
    let legacy = job.legacy;
    if (legacy === undefined) {
      // A read-only operation (or documentation) changes nothing in the old service: pipelined, and
      // sent again if its connection closes before the answer; the others never twice.
      const idempotent = job.operation === null ? job.binding === 'doc' : !stateful.has(job.operation);
      const sending = performance.now();
      const exchange = forwarder.forward({ ...job.request, body: asBuffer(job.request.body), idempotent });
      if (!settings.pipelining) timed(sending);
      legacy = await exchange;
      noteExchange(legacy);
    }
    let started = performance.now();
    if (legacy.kind !== 'answer' || job.ours === null) {
      count('error', job);
      return timed(started);
    }
    const [theirs, ours] = [rawAnswerOf(legacy.answer), rawAnswerOf(job.ours)];
    const oursSide: AnswerSide = { url: { origin: job.oursOrigin, host: job.oursOrigin.replace(/^[a-z]+:\/\//, '') }, path: job.oursPath };
    if (settings.byteCompare && sameWithoutNormalising(theirs, ours, [legacySide, oursSide], job.operation ?? undefined)) {
      count('same', job);
      return timed(started);
    }
    timed(started);
    await inSlowLane();
    started = performance.now();
    const compared = compareAnswers(theirs, ours, [legacySide, oursSide], job.operation ?? undefined);
    count(compared.same ? 'same' : 'different', job);
    timed(started);
    if (compared.same) return;
    // Redaction and the diff in a turn of their own.
    await inSlowLane();
    started = performance.now();
    keepDifference(job, compared.legacy, compared.ours);
    timed(started);
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
        }, settings.batchWaitMs);
        batchTimer.unref();
      }
      return;
    }
    if (batchTimer !== null) {
      clearTimeout(batchTimer);
      batchTimer = null;
    }
    let started = 0;
    while (running < settings.concurrency && queue.length > 0) {
      if (++started > STARTS_PER_TURN) {
        schedulePump(true);
        return;
      }
      const next = queue.shift();
      if (next === undefined) break;
      running += 1;
      run(next)
        .catch((error: unknown) => {
          count('error', next);
          events.log('error', { err: { name: (error as Error).name, message: (error as Error).message } }, 'shadow: comparison failed');
        })
        .finally(() => {
          running -= 1;
          // A place is free: a full batch waiting starts now, a partial one keeps its wait.
          pump();
          settleIdle();
        });
    }
  }

  /** Not in this turn: what submitted the job finishes first (on the event loop, the client's answer is flushed). */
  function schedulePump(now = false): void {
    if (pumpScheduled) return;
    pumpScheduled = true;
    setImmediate(() => {
      pumpScheduled = false;
      pump(now);
    });
  }

  const idle = (): Promise<void> =>
    new Promise<void>((resolve) => {
      idleWaiters.push(resolve);
      // A batch still gathering starts now rather than at the end of its wait.
      if (queue.length > 0) schedulePump(true);
      settleIdle();
    });

  return {
    submit(job) {
      if (closed) return count('dropped', job);
      queue.push(job);
      schedulePump();
    },
    idle,
    async close(timeoutMs) {
      closed = true;
      if (batchTimer !== null) clearTimeout(batchTimer);
      batchTimer = null;
      for (const job of queue.splice(0)) count('dropped', job);
      await Promise.race([idle(), new Promise((resolve) => setTimeout(resolve, timeoutMs).unref())]);
      forwarder.close();
    },
  };
}
