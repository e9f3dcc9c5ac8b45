/**
 * ValidateUser as a pipeline of named steps (the `validateUser` function below reads as the
 * list). Every path does the same work (two lookups, one hash verification) and every failure is
 * the same value, padded to the same duration (failure-padding.ts), so neither the answer nor its
 * timing says why it failed; the reason goes to the events (auth-events.ts), never to the client.
 */
import type { CallerContext, ValidateUserInput, ValidateUserOutcome } from './auth-service.js';
import type { AccountStore, Application, ThrottleScope, TokenStore, UserCredentials } from '../store/store.js';
import type { PasswordHasher } from './password-hasher.js';
import type { Clock } from './clock.js';
import type { AuthEvents, LoginOutcome } from './auth-events.js';
import type { FailurePadding } from './failure-padding.js';
import type { LoginThrottle } from './login-throttle.js';
import type { LegacyMigration } from './legacy-migration.js';
import { cryptoRandomSource } from './random-source.js';
import { initialExpiry, newTokenString } from './tokens.js';
import { findUserByLogin } from './logins.js';
import { passwordCandidates, type PasswordCandidates } from './password-candidates.js';
import { passwordTooLong } from './password-limits.js';
import { attemptAddress } from './source-address.js';
import { isValidIpAddress } from './ip-address.js';
import { tokenFingerprint } from './audit.js';

export interface ValidateUserDeps {
  readonly store: Pick<AccountStore, 'getApplication' | 'findUserByLoginKey'> & Pick<TokenStore, 'insertSession'>;
  readonly hasher: PasswordHasher;
  readonly clock: Clock;
  /** The observers, combined (combineAuthEvents). */
  readonly events: Required<AuthEvents>;
  readonly padding: FailurePadding;
  /** Brute-force counters; null: no throttling. */
  readonly throttle: LoginThrottle | null;
  /** Lazy migration; null: no old service to ask. */
  readonly legacy: LegacyMigration | null;
  /** A new token in the profile's form, and the hash the store keeps for it. */
  readonly issue: () => { readonly text: string; readonly hash: string };
}

/** One call as the steps after the throttle see it. */
interface LoginCall {
  readonly input: ValidateUserInput;
  readonly ctx: CallerContext;
  /** padding.now() when the call began: failures are padded from here. */
  readonly started: number;
  /** The login as sent; '' when missing. */
  readonly login: string;
  /** The address the attempt counts under in the brute-force counters (source-address.ts). */
  readonly from: string;
  /** A slot is held in the counters: exactly one of failed / succeeded / released must follow. */
  readonly holdsSlot: boolean;
  /** The counter that refused the attempt; null when the password may be verified. */
  readonly throttledBy: ThrottleScope | null;
}

/** What verifying the password found; `not-tried`: throttled, or too long to hash. */
type PasswordMatch = 'matched' | 'matched-as-sent' | 'no-match' | 'not-tried';

const FAILED: ValidateUserOutcome = Object.freeze({ ok: false });

export function createValidateUser(deps: ValidateUserDeps): (input: ValidateUserInput, ctx: CallerContext) => Promise<ValidateUserOutcome> {
  const { store, hasher, clock, events, padding, throttle, legacy, issue } = deps;

  // An unknown login must cost one real verification too, or response time would tell which
  // logins exist. The dummy hash is computed once, from a password nobody knows.
  const dummyHash = hasher.hash(newTokenString(cryptoRandomSource));
  dummyHash.catch(() => undefined); // surfaced when awaited, not as an unhandled rejection
  // Until the first real success, failures are padded to one verification's cost, measured here.
  void dummyHash
    .then(async (hash) => {
      const t = padding.now();
      await hasher.verify(hash, 'calibration');
      if (padding.targetMs() === 0) padding.recordSuccess(padding.now() - t);
    })
    .catch(() => undefined);

  return async function validateUser(input: ValidateUserInput, ctx: CallerContext): Promise<ValidateUserOutcome> {
    const started = padding.now();
    const app = Number.isSafeInteger(input.appId) ? await store.getApplication(input.appId) : null;
    // PRECIS UsernameCaseMapped, or the key a login had before (logins.ts).
    const found = input.login === null || input.login === '' ? null : await findUserByLogin(store, input.login);
    const call = await reserveAttempt(input, ctx, started, app);
    const candidates = passwordCandidates(input.password);
    const match = await verifyPassword(call, found, candidates);
    const migrated = match === 'no-match' && app !== null ? await askLegacy(call, app, found) : null;
    const user = migrated ?? found;

    if (call.throttledBy !== null) return refuse(call, 'throttled', user);
    if (app === null) return refuse(call, 'unknown-app', user);
    if (user === null) return refuse(call, 'unknown-user', user);
    const passwordOk = input.password !== null && (migrated !== null || match === 'matched' || match === 'matched-as-sent');
    const refusal = accountRefusal(app, user, passwordOk, input.ipAddress);
    if (refusal !== null) return refuse(call, refusal, user);
    // A legacy or weaker hash becomes argon2id in the token's own transaction (nothing else changes);
    // so does a hash of the password as sent that its prepared form did not match.
    const rehash = match === 'matched-as-sent' || hasher.needsRehash(user.passwordHash) ? candidates.first : null;
    return openSession(call, app, user, rehash);
  };

  /**
   * Brute-force protection (login-throttle.ts): no verification without a slot reserved in the
   * store, counted under the end user's address when a trusted caller of the application names it.
   */
  async function reserveAttempt(input: ValidateUserInput, ctx: CallerContext, started: number, app: Application | null): Promise<LoginCall> {
    const login = input.login ?? '';
    const from = attemptAddress(ctx.sourceIp, input.ipAddress, app?.trustedCallers ?? []);
    const reservation = throttle === null ? null : await throttle.reserve(login, from);
    const throttledBy = reservation !== null && !reservation.granted ? reservation.refusedBy : null;
    return { input, ctx, started, login, from, holdsSlot: reservation?.granted === true, throttledBy };
  }

  /** The user's hash (or the dummy one) against the candidates, unless throttled or too long. */
  async function verifyPassword(call: LoginCall, user: UserCredentials | null, candidates: PasswordCandidates): Promise<PasswordMatch> {
    const password = call.input.password;
    // An empty or missing password is never a password, whatever the stored format: ASP.NET
    // Membership's ValidateUser refuses it before looking at the hash (SecUtility.ValidateParameter
    // with checkIfEmpty), so no legacy user ever logged in with one, and the import sends a Clear
    // row with an empty password to "needs reset" by the same rule. The dummy hash is verified
    // instead (it never matches), so the refusal costs what any other failure costs.
    const hash = (password === null || password === '' ? null : user?.passwordHash) ?? await dummyHash;
    if (call.throttledBy !== null || (password !== null && passwordTooLong(password))) return 'not-tried';
    try {
      if (await hasher.verify(hash, candidates.first)) return 'matched';
      if (candidates.asSent !== null && await hasher.verify(hash, candidates.asSent)) return 'matched-as-sent';
      // What a verification costs now, also while nobody succeeds (failure-padding.ts).
      padding.recordVerification(padding.now() - call.started);
      return 'no-match';
    } catch (error) {
      // A verification that cannot run (server too busy) gives its slot back and counts as nothing.
      if (call.holdsSlot) await throttle?.released(call.login, call.from).catch(() => undefined);
      throw error;
    }
  }

  /**
   * Lazy migration (legacy-migration.ts): a login unknown here, or with a hash this service
   * cannot check, may be vouched for once by the old service. The migrated user, or null.
   */
  async function askLegacy(call: LoginCall, app: Application, user: UserCredentials | null): Promise<UserCredentials | null> {
    const password = call.input.password;
    if (legacy === null || password === null || password === '' || call.login === '') return null;
    const migrated = await legacy.attempt({ login: call.login, password, app, ipAddress: call.input.ipAddress }, user);
    // What asking the old service costs becomes what every failure costs (failure-padding.ts).
    if (migrated.asked) padding.recordLegacyCall(padding.now() - call.started);
    return migrated.user;
  }

  /** The one failure answer: counted for the pair, reported with its reason, padded. */
  async function refuse(call: LoginCall, outcome: LoginOutcome, user: UserCredentials | null): Promise<ValidateUserOutcome> {
    if (call.holdsSlot) await throttle?.failed(call.login, call.from);
    const { input, ctx, throttledBy } = call;
    const who = user === null ? { unknownLogin: input.login } : { login: user.login };
    events.loginOutcome({ outcome, appId: input.appId, userId: user?.userId ?? null, ctx, ...who, claimedIp: input.ipAddress, ...(throttledBy !== null && { throttledBy }) });
    await padding.pad(call.started);
    return FAILED;
  }

  /** A session token stored (with the new hash, if any), counted, reported; the success answer. */
  async function openSession(call: LoginCall, app: Application, user: UserCredentials, rehash: string | null): Promise<ValidateUserOutcome> {
    const { input, ctx } = call;
    const newPasswordHash = rehash === null ? null : await hasher.hash(rehash);
    const { text: token, hash: tokenHash } = issue();
    const issuedAt = clock.now();
    const expiry = initialExpiry(issuedAt, app.tokenLifetimeSeconds, app.idleTimeoutSeconds);
    const stored = await store.insertSession({
      tokenHash,
      userId: user.userId,
      appId: app.appId,
      clientIp: isValidIpAddress(input.ipAddress) ? input.ipAddress : null,
      sourceIp: ctx.sourceIp === '' ? null : ctx.sourceIp,
      issuedAt,
      expiresAt: expiry.absolute,
    }, { passwordHash: user.passwordHash, ...(newPasswordHash !== null && { newPasswordHash }) });
    // Refused when the user was disabled or the password changed while we were verifying.
    if (!stored) return refuse(call, 'changed-meanwhile', user);
    await throttle?.succeeded(call.login, call.from); // forgets the pair's failures
    const tokenFp = tokenFingerprint(tokenHash); // audit trail: never the token itself
    events.loginOutcome({ outcome: 'success', appId: app.appId, userId: user.userId, ctx, login: user.login, claimedIp: input.ipAddress, tokenFp });
    events.tokenIssued({ userId: user.userId, appId: app.appId, ctx, login: user.login, tokenFp });
    padding.recordSuccess(padding.now() - call.started);
    return { ok: true, token, expiresAt: expiry.effective, login: user.login };
  }
}

/**
 * Why a known user of a known application may not log in, or null: the checks after the
 * password, in the order LOGIN_OUTCOMES lists them (auth-events.ts).
 */
export function accountRefusal(app: Application, user: UserCredentials, passwordOk: boolean, ipAddress: string | null): LoginOutcome | null {
  if (!passwordOk) return 'bad-password';
  if (!app.enabled) return 'app-disabled';
  if (!user.enabled) return 'user-disabled';
  if (!user.appIds.includes(app.appId)) return 'not-granted';
  if (app.requireIp && !isValidIpAddress(ipAddress)) return 'bad-ip';
  return null;
}
