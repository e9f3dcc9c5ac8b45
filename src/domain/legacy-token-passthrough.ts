/**
 * Token passthrough (config `legacy.tokenPassthrough`; docs/cutover.md#passthrough): at the
 * switch from the old Authentication.asmx, every GPS device and web session holds a token the old
 * service issued. Until an end date, a token unknown here and written in the old service's token
 * form is asked of the old service's ValidateUserToken, and its "yes" is honoured by
 * ValidateUserToken, ValidateUserTokenJSON, WhatsNew's AppToken and GetUserLoginURL (relayed to
 * the old service's GetUserLoginURL, so the URL is one the old web applications accept).
 *
 * The old service is a peer across a trust boundary, and it is asked on behalf of anyone who
 * sends a well-formed string, so every answer is bounded:
 *
 * - Only an answer of exactly `true` is a yes (legacy-guard.ts's rule: recognised positively,
 *   never "anything but false"); a fault, a timeout, garbage or an oversized answer is no.
 * - Answers are kept a short time (`cacheSeconds`; a "no" `negativeCacheSeconds`), so a token
 *   revoked on the old service stops working within it. Keyed by the token's SHA-256, never the
 *   token; yes and no in separate bounded memories, so a flood of forged tokens cannot push out
 *   the real ones.
 * - Concurrent asks about one token share one call; calls in flight are at most `maxConcurrent`,
 *   beyond that the answer is no at once (counted as `overloaded`): a slow or hostile old service
 *   holds a bounded number of sockets, and requests never queue behind it.
 * - A circuit breaker: after `circuitFailures` consecutive failures (timeouts, errors) the old
 *   service is taken as down for `circuitCooldownMs`, and answers are no at once; then one call
 *   is let through (half-open) and its outcome closes or reopens the circuit.
 * - Before the first question, and again every `probeIntervalMs`, the old service is asked about
 *   a random token in its form. A real service says no; a yes means it says yes to anything (a
 *   broken stand-in, a catch-all proxy), and passthrough is refused until restart, loudly.
 * - On and off by the clock, per request: after `until` nothing is asked and nothing kept counts.
 *
 * Our own tokens never come here: the service asks only about tokens its store does not know.
 *
 * Adoption (`adopter`, config `legacy.adoptTokens`; legacy-token-adoption.ts; docs/cutover.md#adoption):
 * after a fresh yes (not one kept in memory), the old service's ValidateUserTokenJSON is asked
 * about the token, and an answer that names its owner and expiry in the profile's layout stores
 * the token here; from then on the store finds it and this module never sees it again. The
 * ValidateUserToken yes comes first, so the probe's guard holds: a service that says yes to
 * anything adopts nothing. Adoption starts once the yes is answered and the client's answer does
 * not wait for it. Its calls count against `maxConcurrent`, take at most half of it (checks keep
 * the rest), are not made while the circuit is not closed, and their failures do not move the
 * circuit (a missing or broken JSON operation must not stop passthrough); one adoption per token
 * at a time. One that did not store the token is tried again at the token's next fresh yes.
 */
import { hash } from 'node:crypto';
import type { CallerContext, TokenCheck } from './auth-service.js';
import type { Clock } from './clock.js';
import { TOKEN_ADOPTION_RESULTS, type TokenAdopter, type TokenAdoptionResult } from './legacy-token-adoption.js';
import type { RandomSource } from './random-source.js';
import { recentMap } from './recent-map.js';
import { isTokenInForm, type TokenForm } from './token-form.js';
import { newTokenString } from './tokens.js';

/** What the old service answered, as read off the wire; not yet judged. Never a rejection. */
export type LegacyTokenReply =
  | { readonly kind: 'answer'; readonly result: string }
  | { readonly kind: 'unavailable'; readonly reason: string };

/**
 * The old service's token operations, as a client calls them (src/legacy/soap-legacy-tokens.ts).
 * A call must settle within the client's own timeout (the SOAP client's timer destroys the
 * request): a call in flight holds one of the `maxConcurrent` slots, and a token's other checks
 * wait for it.
 */
export interface LegacyTokenService {
  validateUserToken(token: string): Promise<LegacyTokenReply>;
  getUserLoginUrl(token: string, appId: number): Promise<LegacyTokenReply>;
  /** ValidateUserTokenJSON's JSON text, for adoption; absent when the client cannot call it. */
  validateUserTokenJson?(token: string): Promise<LegacyTokenReply>;
}

/** How one check ended (the `result` label of svcapi_auth_legacy_token_checks_total). */
export const LEGACY_TOKEN_CHECK_RESULTS = ['valid', 'invalid', 'error', 'circuit_open', 'overloaded', 'cached_valid', 'cached_invalid', 'unsafe'] as const;
export type LegacyTokenCheckResult = (typeof LEGACY_TOKEN_CHECK_RESULTS)[number];

/** How one GetUserLoginURL relay ended: the URL returned, or why none was. */
export const LOGIN_URL_RELAY_RESULTS = ['relayed', 'none', 'error', 'circuit_open', 'overloaded'] as const;
export type LoginUrlRelayResult = (typeof LOGIN_URL_RELAY_RESULTS)[number];

export type CircuitState = 'closed' | 'open' | 'half_open';

export interface PassthroughStatus {
  /** On now (before the end date). */
  readonly active: boolean;
  readonly until: string;
  readonly circuit: CircuitState;
  /** True once the old service said yes to a random token: every answer is no until restart. */
  readonly unsafe: boolean;
  readonly inFlight: number;
  /** Checks since start, by result. */
  readonly counts: Readonly<Record<LegacyTokenCheckResult, number>>;
  /** Adoptions tried since start, by result (all 0 without an adopter). */
  readonly adoptions: Readonly<Record<TokenAdoptionResult, number>>;
}

export interface PassthroughChange {
  readonly event: 'circuit_open' | 'circuit_half_open' | 'circuit_closed' | 'unsafe' | 'ended';
  /** In words for an operator; never a token. */
  readonly reason: string;
}

export interface LegacyTokenPassthroughOptions {
  readonly legacy: LegacyTokenService;
  /** Passthrough is on before this instant, off from it (`legacy.tokenPassthrough`). */
  readonly until: Date;
  /** How the old service writes its tokens; other texts are never asked about. */
  readonly tokenForm: TokenForm;
  readonly clock: Clock;
  readonly random: RandomSource;
  /** A yes is kept this long (default 60; `legacy.passthroughCacheSeconds`). 0 keeps nothing. */
  readonly cacheSeconds?: number;
  /** A no is kept this long (default 10; `legacy.passthroughNegativeCacheSeconds`). */
  readonly negativeCacheSeconds?: number;
  /** Answers kept at most, yes and no each (default 10,000). */
  readonly maxEntries?: number;
  /** Calls to the old service in flight at most (default 16; `legacy.maxConcurrent`). */
  readonly maxConcurrent?: number;
  /** Consecutive failures that open the circuit (default 5; `legacy.circuitFailures`). */
  readonly circuitFailures?: number;
  /** How long an open circuit answers no at once (default 30 s; `legacy.circuitCooldownMs`). */
  readonly circuitCooldownMs?: number;
  /** The random-token probe is repeated this often (default 15 minutes). */
  readonly probeIntervalMs?: number;
  /** The longest login URL relayed (default 2048 characters). */
  readonly maxUrlLength?: number;
  /** Every check, once (metrics). */
  readonly onCheck?: (result: LegacyTokenCheckResult) => void;
  /** Every GetUserLoginURL relay, once (metrics). */
  readonly onRelay?: (result: LoginUrlRelayResult) => void;
  /**
   * Token adoption (config `legacy.adoptTokens`): stores a token the old service vouched for,
   * from its ValidateUserTokenJSON answer (`legacy.validateUserTokenJson`). Absent: never.
   */
  readonly adopter?: TokenAdopter;
  /** Every adoption tried, once, when it ended (metrics). */
  readonly onAdoption?: (result: TokenAdoptionResult) => void;
  /** Circuit changes, the end of the window, an unsafe old service (serve logs them). */
  readonly onChange?: (change: PassthroughChange) => void;
}

export interface LegacyTokenPassthrough {
  /**
   * The old service's verdict on a token unknown here: valid (with the time until which this
   * answer stands) or not. Not valid at once, without asking, when passthrough is off or ended,
   * or the text is not in the old service's token form. `ctx`, the request asking, goes with
   * an adoption this check starts (its events).
   */
  check(token: string, ctx?: CallerContext): Promise<TokenCheck>;
  /**
   * The old service's GetUserLoginURL for a token it vouches for: its answer as is when it is
   * an absolute http(s) URL of bounded length, else null ("no URL").
   */
  loginUrl(token: string, appId: number, ctx?: CallerContext): Promise<string | null>;
  status(): PassthroughStatus;
}

const INVALID: TokenCheck = Object.freeze({ valid: false });

/** One call's outcome, before judging: an answer (the service works) or a failure. */
type Called = { readonly ok: true; readonly result: string } | { readonly ok: false };

/** Whether the old service's GetUserLoginURL answer can be handed to a client as a URL. */
export function usableLoginUrl(text: string, maxLength: number): boolean {
  if (text.length === 0 || text.length > maxLength) return false;
  // Whitespace and control characters: a URL never needs them raw, a header-splitting one does.
  // eslint-disable-next-line no-control-regex
  if (/[\s\u0000-\u001f\u007f]/.test(text)) return false;
  if (!URL.canParse(text)) return false;
  const url = new URL(text);
  return (url.protocol === 'http:' || url.protocol === 'https:') && url.hostname !== '';
}

export function createLegacyTokenPassthrough(options: LegacyTokenPassthroughOptions): LegacyTokenPassthrough {
  const { legacy, clock, random, tokenForm } = options;
  const untilMs = options.until.getTime();
  const positiveMs = Math.max(0, options.cacheSeconds ?? 60) * 1000;
  const negativeMs = Math.max(0, options.negativeCacheSeconds ?? 10) * 1000;
  const maxEntries = Math.max(1, options.maxEntries ?? 10_000);
  const maxConcurrent = Math.max(1, options.maxConcurrent ?? 16);
  const circuitFailures = Math.max(1, options.circuitFailures ?? 5);
  const cooldownMs = options.circuitCooldownMs ?? 30_000;
  const probeIntervalMs = options.probeIntervalMs ?? 15 * 60_000;
  const maxUrlLength = options.maxUrlLength ?? 2048;

  const counts = Object.fromEntries(LEGACY_TOKEN_CHECK_RESULTS.map((r) => [r, 0])) as Record<LegacyTokenCheckResult, number>;
  const adoptionCounts = Object.fromEntries(TOKEN_ADOPTION_RESULTS.map((r) => [r, 0])) as Record<TokenAdoptionResult, number>;
  // Adoption may hold at most half the calls in flight: token checks, which a client waits for, keep the rest.
  const maxAdopting = Math.max(1, Math.floor(maxConcurrent / 2));
  /** SHA-256 of the tokens being adopted now. */
  const adopting = new Set<string>();
  /** SHA-256 of the token → until when the answer stands (ms). */
  let yes = recentMap<number>(maxEntries);
  let no = recentMap<number>(maxEntries);
  const asking = new Map<string, Promise<Verdict>>();
  let inFlight = 0;
  let circuit: CircuitState = 'closed';
  let failures = 0;
  let openedAt = 0;
  let halfOpenedAt = 0;
  let unsafe = false;
  let ended = false;
  let probedAt = -Infinity;
  let probing: Promise<'confirmed' | 'failed' | 'unsafe'> | null = null;

  type Verdict = { readonly result: LegacyTokenCheckResult; readonly untilMs?: number };

  const nowMs = (): number => clock.now().getTime();
  const notify = (change: PassthroughChange): void => {
    try {
      options.onChange?.(change);
    } catch {
      // An observer's trouble never changes an answer.
    }
  };
  const count = (result: LegacyTokenCheckResult): void => {
    counts[result] += 1;
    try {
      options.onCheck?.(result);
    } catch {
      // as above
    }
  };
  const relayed = (result: LoginUrlRelayResult): void => {
    try {
      options.onRelay?.(result);
    } catch {
      // as above
    }
  };
  const adoptionEnded = (result: TokenAdoptionResult): void => {
    adoptionCounts[result] += 1;
    try {
      options.onAdoption?.(result);
    } catch {
      // as above
    }
  };
  const forgetAll = (): void => {
    yes = recentMap<number>(maxEntries);
    no = recentMap<number>(maxEntries);
  };

  function active(now: number): boolean {
    if (now < untilMs) return true;
    if (!ended) {
      ended = true;
      forgetAll();
      notify({ event: 'ended', reason: `token passthrough ended at ${options.until.toISOString()}: tokens of the old service are no longer asked about` });
    }
    return false;
  }

  function setCircuit(next: CircuitState, reason: string): void {
    if (next === circuit) return;
    circuit = next;
    notify({ event: next === 'open' ? 'circuit_open' : next === 'half_open' ? 'circuit_half_open' : 'circuit_closed', reason });
  }

  /**
   * Whether a call may go to the old service now: not while the circuit is open (or its one
   * half-open call is out), not beyond `maxConcurrent` calls in flight. Once an open circuit's
   * cool-down has passed, the next call admitted is the half-open probe.
   */
  function admit(now: number): 'call' | 'probe' | 'circuit_open' | 'overloaded' {
    // A half-open call whose outcome never counted (it shared a random-token probe begun before
    // the circuit opened) must not keep the circuit half-open for good: after another cool-down,
    // another call may decide.
    if (circuit === 'half_open' && now - halfOpenedAt < cooldownMs) return 'circuit_open';
    if (circuit === 'open' && now - openedAt < cooldownMs) return 'circuit_open';
    if (inFlight >= maxConcurrent) return 'overloaded';
    if (circuit === 'closed') return 'call';
    halfOpenedAt = now;
    setCircuit('half_open', 'cool-down over: one call to the legacy service decides whether it is back');
    return 'probe';
  }

  function outcome(ok: boolean, probe: boolean, reason: string): void {
    // Calls that started before the circuit opened say nothing about the service now.
    if (circuit === 'open' || (circuit === 'half_open' && !probe)) return;
    if (ok) {
      failures = 0;
      setCircuit('closed', 'the legacy service answers again');
      return;
    }
    failures += 1;
    if (probe || failures >= circuitFailures) {
      openedAt = nowMs();
      failures = 0;
      setCircuit('open', `${probe ? 'the half-open call failed' : `${circuitFailures} consecutive calls failed`} (last: ${reason}); tokens of the old service are not valid for ${cooldownMs} ms`);
    }
  }

  async function call(work: () => Promise<LegacyTokenReply>, probe: boolean): Promise<Called> {
    let reply: LegacyTokenReply;
    try {
      reply = await work();
    } catch {
      reply = { kind: 'unavailable', reason: 'client error' };
    }
    if (reply.kind === 'unavailable') {
      outcome(false, probe, reply.reason);
      return { ok: false };
    }
    outcome(true, probe, '');
    return { ok: true, result: reply.result };
  }

  /**
   * The random-token probe, shared by concurrent callers: 'confirmed' when the old service said
   * no to a token nobody has, 'unsafe' when it said yes.
   */
  function confirm(probe: boolean): Promise<'confirmed' | 'failed' | 'unsafe'> {
    if (unsafe) return Promise.resolve('unsafe');
    if (nowMs() - probedAt < probeIntervalMs) return Promise.resolve('confirmed');
    probing ??= (async (): Promise<'confirmed' | 'failed' | 'unsafe'> => {
      const canary = newTokenString(random, tokenForm);
      const called = await call(() => legacy.validateUserToken(canary), probe);
      if (!called.ok) return 'failed';
      if (called.result === 'true') {
        unsafe = true;
        forgetAll();
        notify({ event: 'unsafe', reason: 'the legacy service said a random token is valid: it would vouch for any well-formed token; token passthrough is refused until restart (check legacy.url)' });
        return 'unsafe';
      }
      probedAt = nowMs();
      return 'confirmed';
    })().finally(() => {
      probing = null;
    });
    return probing;
  }

  async function ask(token: string, key: string, probe: boolean): Promise<Verdict> {
    const confirmed = await confirm(probe);
    if (confirmed !== 'confirmed') return { result: confirmed === 'unsafe' ? 'unsafe' : 'error' };
    // The half-open probe's decisive call is the random-token probe when one was made.
    const called = await call(() => legacy.validateUserToken(token), probe && circuit === 'half_open');
    if (!called.ok) return { result: 'error' };
    if (unsafe) return { result: 'unsafe' }; // the probe of another caller found out meanwhile
    const now = nowMs();
    if (called.result === 'true') {
      const until = Math.min(now + positiveMs, untilMs);
      if (positiveMs > 0) yes.set(key, until);
      no.delete(key);
      return { result: 'valid', untilMs: until };
    }
    if (negativeMs > 0) no.set(key, now + negativeMs);
    yes.delete(key);
    return { result: 'invalid' };
  }

  function fromMemory(key: string, now: number): Verdict | null {
    const kept = yes.get(key);
    if (kept !== undefined) {
      if (kept > now) return { result: 'cached_valid', untilMs: kept };
      yes.delete(key);
    }
    const refused = no.get(key);
    if (refused !== undefined) {
      if (refused > now) return { result: 'cached_invalid' };
      no.delete(key);
    }
    return null;
  }

  async function verdict(token: string, ctx: CallerContext | undefined): Promise<Verdict> {
    const now = nowMs();
    if (unsafe) return { result: 'unsafe' };
    const key = hash('sha256', token, 'hex');
    const kept = fromMemory(key, now);
    if (kept !== null) return kept;
    const pending = asking.get(key);
    if (pending !== undefined) {
      // Another request is asking about this very token: its answer is this one's, without a call.
      const shared = await pending;
      return shared.result === 'valid' ? { ...shared, result: 'cached_valid' } : shared.result === 'invalid' ? { result: 'cached_invalid' } : shared;
    }
    const gate = admit(now);
    if (gate === 'circuit_open' || gate === 'overloaded') return { result: gate };
    inFlight += 1;
    const flight = ask(token, key, gate === 'probe').finally(() => {
      inFlight -= 1;
      asking.delete(key);
    });
    asking.set(key, flight);
    // After the yes is settled (and its call's slot given back); the client's answer does not wait.
    if (options.adopter !== undefined) {
      void flight.then((v) => {
        if (v.result === 'valid') adoptLater(token, key, ctx);
      });
    }
    return flight;
  }

  /**
   * Asks the old ValidateUserTokenJSON about a token it just vouched for, and hands the answer
   * to the adopter; never while the old service is in trouble or beyond the adoption budget.
   */
  async function adoptNow(token: string, adopter: TokenAdopter, askJson: (token: string) => Promise<LegacyTokenReply>, ctx: CallerContext | undefined): Promise<TokenAdoptionResult> {
    if (unsafe || circuit !== 'closed' || inFlight >= maxConcurrent || adopting.size > maxAdopting || !active(nowMs())) return 'error';
    inFlight += 1;
    let reply: LegacyTokenReply;
    try {
      reply = await askJson(token);
    } catch {
      reply = { kind: 'unavailable', reason: 'client error' };
    } finally {
      inFlight -= 1;
    }
    // The random-token probe of another caller may have found the service unsafe meanwhile.
    if (reply.kind !== 'answer' || unsafe) return 'error';
    return adopter.adopt(token, reply.result, ctx);
  }

  /** Starts adopting a token after its fresh yes, unless it is being adopted already. */
  function adoptLater(token: string, key: string, ctx: CallerContext | undefined): void {
    const adopter = options.adopter;
    const askJson = legacy.validateUserTokenJson;
    if (adopter === undefined || askJson === undefined || adopting.has(key)) return;
    adopting.add(key);
    void adoptNow(token, adopter, (t) => askJson.call(legacy, t), ctx)
      .catch((): TokenAdoptionResult => 'error')
      .then((result) => {
        adopting.delete(key);
        adoptionEnded(result);
      });
  }

  /** Whether this text is a question for the old service at all (cheap, no call). */
  const askable = (token: string): boolean => active(nowMs()) && isTokenInForm(token, tokenForm);

  async function check(token: string, ctx?: CallerContext): Promise<TokenCheck> {
    if (!askable(token)) return INVALID;
    const { result, untilMs: until } = await verdict(token, ctx);
    count(result);
    // A yes stands until its memory ends (at most the end date): that is the expiry we know.
    return until !== undefined && (result === 'valid' || result === 'cached_valid') && !unsafe ? { valid: true, expiresAt: new Date(until) } : INVALID;
  }

  async function loginUrl(token: string, appId: number, ctx?: CallerContext): Promise<string | null> {
    if (!askable(token) || !Number.isSafeInteger(appId)) return null;
    // The URL is asked for only about a token the old service vouches for (usually a kept
    // answer): a forged token costs at most one ValidateUserToken, kept as a no.
    if (!(await check(token, ctx)).valid) return null;
    const gate = admit(nowMs());
    if (gate === 'circuit_open' || gate === 'overloaded') {
      relayed(gate);
      return null;
    }
    inFlight += 1;
    let called: Called;
    try {
      called = await call(() => legacy.getUserLoginUrl(token, appId), gate === 'probe');
    } finally {
      inFlight -= 1;
    }
    if (!called.ok || unsafe) {
      relayed('error');
      return null;
    }
    if (!usableLoginUrl(called.result, maxUrlLength)) {
      relayed('none');
      return null;
    }
    relayed('relayed');
    return called.result;
  }

  return {
    check,
    loginUrl,
    status: () => ({ active: nowMs() < untilMs, until: options.until.toISOString(), circuit, unsafe, inFlight, counts: { ...counts }, adoptions: { ...adoptionCounts } }),
  };
}
