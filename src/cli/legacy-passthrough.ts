/**
 * serve's wiring of what talks to the old service beyond lazy migration: the CA file trusted for
 * it (`legacy.caFile`) and token passthrough (`legacy.tokenPassthrough`,
 * domain/legacy-token-passthrough.ts), with adoption when `legacy.adoptTokens` is on
 * (domain/legacy-token-adoption.ts), and their metrics, log lines and audit events.
 *
 * What the operator sees (docs/cutover.md#passthrough): at start, whether passthrough is on and
 * until when; every circuit change and the end of the window as they happen; an "unsafe" old
 * service as an error; and every `summaryIntervalMs` the checks made since the last summary
 * (only when there were any), so that the day old tokens stop coming is visible in the log as
 * well as in `svcapi_auth_legacy_token_checks_total`.
 *
 * The same checks, relays and adoptions are tallied for the migration report
 * (domain/legacy-token-tally.ts): fed by the very callbacks that count the metrics, so the two
 * never disagree, and written to the store every minute and at shutdown (close(), which serve
 * awaits before it closes the store).
 */
import { readFile } from 'node:fs/promises';
import { createSecureContext } from 'node:tls';
import type { Logger } from 'pino';
import type { Config } from '../config/config.js';
import type { AuthEvents } from '../domain/auth-events.js';
import { systemClock, type Clock } from '../domain/clock.js';
import { createTokenAdopter, TOKEN_ADOPTION_RESULTS, type TokenAdoptionResult } from '../domain/legacy-token-adoption.js';
import { createLegacyTokenPassthrough, LEGACY_TOKEN_CHECK_RESULTS, type LegacyTokenCheckResult, type LegacyTokenPassthrough } from '../domain/legacy-token-passthrough.js';
import { createLegacyTokenTally, type LegacyTokenTally } from '../domain/legacy-token-tally.js';
import { cryptoRandomSource } from '../domain/random-source.js';
import { describeTokenForm, type TokenForm } from '../domain/token-form.js';
import { legacyAnswerRules } from '../domain/legacy-guard.js';
import { createSoapLegacyTokenService } from '../legacy/soap-legacy-tokens.js';
import type { ServiceMetrics } from '../ops/metrics.js';
import type { Store } from '../store/store.js';
import { CliError } from './cli-io.js';

/** The PEM file of `legacy.caFile`, read and checked once at start; undefined when none is set. */
export async function readLegacyCa(config: Config): Promise<Buffer | undefined> {
  const path = config.legacy.caFile;
  if (path === null) return undefined;
  const ca = await readFile(path).catch((error: unknown) => {
    throw new CliError(`cannot read legacy.caFile ${path}: ${(error as NodeJS.ErrnoException).code ?? (error as Error).message}`);
  });
  try {
    createSecureContext({ ca });
  } catch (error) {
    throw new CliError(`legacy.caFile ${path} holds no usable PEM certificate: ${(error as Error).message}`);
  }
  if (!ca.toString('latin1').includes('-----BEGIN CERTIFICATE-----')) throw new CliError(`legacy.caFile ${path} holds no PEM certificate (-----BEGIN CERTIFICATE-----)`);
  return ca;
}

/**
 * The old service's token form: the compatibility profile's when the operator gave one (a
 * profile describes the old service), else a GUID in D form, either case, braces optional.
 */
export function legacyTokenForm(config: Config): TokenForm {
  // The same rule lazy migration uses: a profile file describes the old service exactly.
  return legacyAnswerRules(config.compat.file === null ? null : config.compat.profile).tokenForm;
}

/** How often serve writes token passthrough's tallies to the store. */
export const TALLY_FLUSH_MS = 60_000;

export interface TokenPassthroughWiring {
  readonly passthrough: LegacyTokenPassthrough;
  /** The checks, relays and adoptions counted for the migration report; `flush()` writes them now. */
  readonly tally: LegacyTokenTally;
  /**
   * Stops the summary and the tallies' timer, closes the sockets to the old service, then writes
   * what the tallies hold (resolves once written, or once the failure is logged).
   */
  close(): Promise<void>;
}

export interface TokenPassthroughOptions {
  readonly config: Config;
  readonly logger: Logger;
  readonly metrics: ServiceMetrics;
  /** Where adopted tokens are stored (`legacy.adoptTokens`). */
  readonly store: Store;
  /** Observers of the adoptions (the audit trail: `token.adopted`, `token.adoption-refused`). */
  readonly events?: AuthEvents;
  readonly ca?: Buffer;
  readonly clock?: Clock;
  /** How often the log summarises the checks (default 15 minutes). */
  readonly summaryIntervalMs?: number;
}

/** Token passthrough as configured, or null when it is off (no end date, or no legacy.url). */
export function startTokenPassthrough(options: TokenPassthroughOptions): TokenPassthroughWiring | null {
  const { config, logger, metrics } = options;
  const { url, tokenPassthroughUntil } = config.legacy;
  if (url === null || tokenPassthroughUntil === null) return null;
  const clock = options.clock ?? systemClock;
  const until = new Date(tokenPassthroughUntil);
  const form = legacyTokenForm(config);
  const adopt = config.legacy.adoptTokens;
  const tokenLayout = config.compat.profile.json.validateUserToken;
  const client = createSoapLegacyTokenService({
    url, timeoutMs: config.legacy.tokenTimeoutMs, maxSockets: config.legacy.maxConcurrent, ...(options.ca !== undefined && { ca: options.ca }),
    ...(adopt && { jsonInputs: tokenLayout.inputs }),
  });
  // The metrics read the passthrough's status at scrape time, and it reports to the metrics.
  const made: { passthrough?: LegacyTokenPassthrough } = {};
  const observers = metrics.observeLegacyTokens(() => {
    if (made.passthrough === undefined) throw new Error('token passthrough scraped before it was made');
    return made.passthrough.status();
  });
  // The migration report's tallies, counted by the same calls as the metrics.
  const tally = createLegacyTokenTally({ store: options.store, clock });
  const passthrough = createLegacyTokenPassthrough({
    legacy: client,
    until,
    tokenForm: form,
    clock,
    random: cryptoRandomSource,
    cacheSeconds: config.legacy.passthroughCacheSeconds,
    negativeCacheSeconds: config.legacy.passthroughNegativeCacheSeconds,
    maxConcurrent: config.legacy.maxConcurrent,
    circuitFailures: config.legacy.circuitFailures,
    circuitCooldownMs: config.legacy.circuitCooldownMs,
    onCheck: (result) => {
      observers.onCheck(result);
      tally.check(result);
    },
    onRelay: (result) => {
      observers.onRelay(result);
      tally.relay(result);
    },
    ...(adopt && { adopter: createTokenAdopter({ store: options.store, clock, layout: tokenLayout, ...(options.events !== undefined && { events: options.events }) }) }),
    onAdoption: (result) => {
      observers.onAdoption(result);
      tally.adoption(result);
      // Never the token nor its owner: the result only (the summary and the metric count them;
      // the audit trail has the adoptions and the refusals that matter, with a fingerprint).
      logger.debug({ adoption: result }, `token adoption: ${result}`);
    },
    onChange: (change) => {
      const fields = { passthrough: change.event };
      if (change.event === 'unsafe') logger.error(fields, `token passthrough refused: ${change.reason}`);
      else if (change.event === 'circuit_open') logger.warn(fields, `token passthrough: ${change.reason}`);
      else logger.info(fields, `token passthrough: ${change.reason}`);
    },
  });
  made.passthrough = passthrough;
  const ended = clock.now().getTime() >= until.getTime();
  if (ended) logger.info({ until: until.toISOString() }, 'token passthrough ended already (legacy.tokenPassthrough): tokens of the old service are not asked about');
  else logger.info({ until: until.toISOString(), tokenForm: describeTokenForm(form), adoptTokens: adopt }, `token passthrough on: tokens unknown here in the old service's form are asked of it until the end date${adopt ? '; those it vouches for are adopted when its ValidateUserTokenJSON names their owner and expiry' : ''}`);

  let last: Readonly<Record<LegacyTokenCheckResult, number>> = passthrough.status().counts;
  let lastAdoptions: Readonly<Record<TokenAdoptionResult, number>> = passthrough.status().adoptions;
  const summary = setInterval(() => {
    const status = passthrough.status();
    const since = Object.fromEntries(LEGACY_TOKEN_CHECK_RESULTS.map((r) => [r, status.counts[r] - last[r]])) as Record<LegacyTokenCheckResult, number>;
    const adoptedSince = Object.fromEntries(TOKEN_ADOPTION_RESULTS.map((r) => [r, status.adoptions[r] - lastAdoptions[r]])) as Record<TokenAdoptionResult, number>;
    last = status.counts;
    lastAdoptions = status.adoptions;
    const total = LEGACY_TOKEN_CHECK_RESULTS.reduce((sum, r) => sum + since[r], 0);
    if (total === 0) return;
    const adoptions = adopt ? `; ${adoptedSince.adopted} adopted` : '';
    logger.info({ checks: since, circuit: status.circuit, active: status.active, ...(adopt && { adoptions: adoptedSince }) }, `token passthrough: ${since.valid + since.cached_valid} of ${total} checks of old tokens were valid since the last summary${adoptions}`);
  }, options.summaryIntervalMs ?? 15 * 60_000);
  summary.unref();

  /** Writes the tallies; a failure is logged (the store's message only) and the counts kept for the next write. */
  const writeTallies = async (when: 'periodic' | 'shutdown'): Promise<void> => {
    const done = await tally.flush();
    if (done.ok) return;
    const reason = done.error instanceof Error ? done.error.message : 'unknown error';
    const fields = { tallies: when, pending: tally.pending(), reason };
    if (when === 'shutdown') logger.error(fields, `token passthrough: ${tally.pending()} counted checks, relays and adoptions could not be written to the database at shutdown and are lost to the migration report`);
    else logger.warn(fields, 'token passthrough: the counts for the migration report could not be written to the database; kept for the next write');
  };
  const flusher = setInterval(() => void writeTallies('periodic'), TALLY_FLUSH_MS);
  flusher.unref();
  return {
    passthrough,
    tally,
    async close() {
      clearInterval(summary);
      clearInterval(flusher);
      client.close();
      await writeTallies('shutdown');
    },
  };
}
