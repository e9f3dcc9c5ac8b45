/**
 * Whether an answer of the old service's ValidateUser means "it issued a token" — the one
 * question lazy migration (legacy-migration.ts) trusts it with. The old service is a peer across
 * a trust boundary, so its "yes" is recognised positively, never as "anything but the known no":
 *
 * 1. The answer must be a token in the old service's token form (token-form.ts: a GUID in D
 *    form by default) that carries randomness (not Guid.Empty, `{0000...}`, all-F), and must not
 *    be its failure value. `LOGIN_FAILED`, `0`, `ERROR`, an empty string: all no.
 * 2. Before the first migration, and again every `probeIntervalMs`, the guard asks the old
 *    service about a random login with a random password. That must fail; if the answer looks
 *    like a token, the old service says yes to anyone (a broken or hostile stand-in, a catch-all
 *    proxy, a failure value in token form), and migration is refused for the life of the process,
 *    loudly (onChange: the log; status(): /health/ready details). While no probe has succeeded
 *    (the old service down), nothing is migrated.
 * 3. Two different logins can never be given the same token: an answer already seen for another
 *    login marks the old service unsafe too (a service that answers one string for everyone).
 *
 * The answer is compared, never logged: it may be a real token of the old service.
 */
import { hash } from 'node:crypto';
import type { CompatProfile } from '../contract/compat-profile.js';
import type { Clock } from './clock.js';
import type { RandomSource } from './random-source.js';
import { loginKey } from './logins.js';
import { DEFAULT_LEGACY_TOKEN_FORM, describeTokenForm, isTokenInForm, type TokenForm } from './token-form.js';

/** What the old service's ValidateUser answered, as read off the wire; not yet judged. */
export type LegacyReply =
  | { readonly kind: 'answer'; readonly result: string }
  | { readonly kind: 'unavailable'; readonly reason: string };

/** The old service's ValidateUser, as a client calls it. Never rejects: trouble is 'unavailable'. */
export interface LegacyAuthenticator {
  validateUser(login: string, password: string, appId: number, ipAddress: string | null): Promise<LegacyReply>;
}

/** How the old service writes its tokens and its "no" (the compatibility profile's values). */
export interface LegacyAnswerRules {
  readonly tokenForm: TokenForm;
  readonly failureValue: string;
}

export const DEFAULT_LEGACY_ANSWER_RULES: LegacyAnswerRules = Object.freeze({ tokenForm: DEFAULT_LEGACY_TOKEN_FORM, failureValue: '' });

/**
 * The rules for the old service an operator described in a compatibility profile file: its
 * token form and its failure value, exactly. Without a file (null) nobody said how the old
 * service writes its tokens, and the loose defaults hold (a GUID in D form, either case, braces
 * optional; '' for no).
 */
export function legacyAnswerRules(profile: CompatProfile | null): LegacyAnswerRules {
  if (profile === null) return DEFAULT_LEGACY_ANSWER_RULES;
  return Object.freeze({ tokenForm: profile.tokens.form, failureValue: profile.validateUser.failureValue });
}

/** True when the answer is a token of the old service under these rules (rule 1 above). */
export function isLegacyToken(result: string, rules: LegacyAnswerRules): boolean {
  return result !== rules.failureValue && isTokenInForm(result, rules.tokenForm);
}

export type LegacyGuardState = 'unconfirmed' | 'confirmed' | 'unsafe';

export interface LegacyGuardStatus {
  readonly state: LegacyGuardState;
  /** Why, in words for an operator (never the answer itself, nor a password). */
  readonly reason: string;
  /** The token form answers must have. */
  readonly tokenForm: string;
  /** When the last probe was answered, if one was. */
  readonly probedAt: string | null;
  /** Whether the probe's "no" was the configured failure value (false: the profile is wrong). */
  readonly failureValueConfirmed: boolean | null;
}

export interface LegacyGuard {
  /**
   * Asks the old service about these credentials and says whether it issued a token. False
   * without asking while the guard is not confirmed (and cannot confirm now) or is unsafe.
   * `asked` tells whether the old service was called for this login (for equal timing).
   */
  vouch(login: string, password: string, appId: number, ipAddress: string | null): Promise<{ readonly vouched: boolean; readonly asked: boolean }>;
  /** Runs the probe now unless one ran within the interval (serve calls it at start). */
  confirm(appId: number): Promise<LegacyGuardStatus>;
  status(): LegacyGuardStatus;
}

export interface LegacyGuardOptions {
  readonly authenticator: LegacyAuthenticator;
  readonly rules?: LegacyAnswerRules;
  readonly clock: Clock;
  readonly random: RandomSource;
  /** A confirmed probe is repeated after this long (default 15 minutes). */
  readonly probeIntervalMs?: number;
  /** After the old service could not be reached, no new probe for this long (default 5 s). */
  readonly retryAfterMs?: number;
  /** How many vouched answers are remembered to detect one given to two logins (default 4096). */
  readonly rememberAnswers?: number;
  /** Told of every change of state (serve logs it: error for unsafe). */
  readonly onChange?: (status: LegacyGuardStatus) => void;
}

export function createLegacyGuard(options: LegacyGuardOptions): LegacyGuard {
  const { authenticator, clock, random } = options;
  const rules = options.rules ?? DEFAULT_LEGACY_ANSWER_RULES;
  const probeIntervalMs = options.probeIntervalMs ?? 15 * 60_000;
  const retryAfterMs = options.retryAfterMs ?? 5_000;
  const rememberAnswers = options.rememberAnswers ?? 4096;
  const form = describeTokenForm(rules.tokenForm);

  let status: LegacyGuardStatus = { state: 'unconfirmed', reason: 'no probe of the legacy service yet', tokenForm: form, probedAt: null, failureValueConfirmed: null };
  let probedAtMs = -Infinity;
  let unavailableAtMs = -Infinity;
  let probing: Promise<LegacyGuardStatus> | null = null;
  /** SHA-256 of each vouched answer → the login key it was given for (insertion order: oldest first). */
  const answers = new Map<string, string>();

  function set(next: Omit<LegacyGuardStatus, 'tokenForm'>): LegacyGuardStatus {
    const changed = next.state !== status.state || next.reason !== status.reason;
    status = { ...next, tokenForm: form };
    if (changed) options.onChange?.(status);
    return status;
  }

  function randomHex(bytes: number): string {
    return Buffer.from(random.bytes(bytes)).toString('hex');
  }

  async function probe(appId: number): Promise<LegacyGuardStatus> {
    // A login nobody has and a password nobody knows: any service must refuse it.
    const reply = await authenticator.validateUser(randomHex(8), randomHex(24), appId, null);
    const now = clock.now();
    if (status.state === 'unsafe') return status;
    if (reply.kind === 'unavailable') {
      unavailableAtMs = now.getTime();
      // A confirmed guard stays confirmed through an outage: every answer is still judged.
      if (status.state === 'confirmed') return status;
      return set({ state: 'unconfirmed', reason: `the legacy service did not answer the probe (${reply.reason}); nothing is migrated until it does`, probedAt: null, failureValueConfirmed: null });
    }
    probedAtMs = now.getTime();
    if (isTokenInForm(reply.result, rules.tokenForm)) {
      return set({
        state: 'unsafe',
        reason: 'the legacy service answered a login with a random password with something in its token form; lazy migration is refused until restart (check legacy.url and the compatibility profile)',
        probedAt: now.toISOString(),
        failureValueConfirmed: false,
      });
    }
    const confirmed = reply.result === rules.failureValue;
    return set({
      state: 'confirmed',
      reason: confirmed ? 'the legacy service refused a random login with its failure value' : 'the legacy service refused a random login, with another failure value than the profile\'s',
      probedAt: now.toISOString(),
      failureValueConfirmed: confirmed,
    });
  }

  function confirm(appId: number): Promise<LegacyGuardStatus> {
    if (status.state === 'unsafe') return Promise.resolve(status);
    const now = clock.now().getTime();
    const fresh = status.state === 'confirmed' && now - probedAtMs < probeIntervalMs;
    if (fresh || (status.state !== 'confirmed' && now - unavailableAtMs < retryAfterMs)) return Promise.resolve(status);
    probing ??= probe(appId).finally(() => {
      probing = null;
    });
    return probing;
  }

  /** Rule 3: false (and unsafe) when the answer was already given for another login. */
  function firstForLogin(result: string, key: string): boolean {
    const answerHash = hash('sha256', result, 'hex');
    const previous = answers.get(answerHash);
    if (previous !== undefined && previous !== key) {
      set({ ...status, state: 'unsafe', reason: 'the legacy service gave the same token to two different logins; lazy migration is refused until restart' });
      return false;
    }
    if (previous === undefined) {
      answers.set(answerHash, key);
      if (answers.size > rememberAnswers) answers.delete(answers.keys().next().value as string);
    }
    return true;
  }

  return {
    async vouch(login, password, appId, ipAddress) {
      if ((await confirm(appId)).state !== 'confirmed') return { vouched: false, asked: false };
      const reply = await authenticator.validateUser(login, password, appId, ipAddress);
      if (reply.kind !== 'answer' || status.state !== 'confirmed') return { vouched: false, asked: true };
      if (!isLegacyToken(reply.result, rules)) return { vouched: false, asked: true };
      return { vouched: firstForLogin(reply.result, loginKey(login)), asked: true };
    },
    confirm,
    status: () => status,
  };
}
