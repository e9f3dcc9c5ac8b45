/**
 * The `legacy` settings: the old Authentication.asmx for lazy migration, token passthrough and
 * adoption, and the shadow and front modes (docs/cutover.md). They depend on one another (each
 * needs legacy.url; adoption needs passthrough and a profile that names a token's owner), so they
 * are read and checked together here.
 */
import type { CompatProfile } from '../contract/compat-profile.js';
import { OPERATIONS } from '../contract/operations.js';
import type { Config } from './config.js';
import { ConfigError } from './config-error.js';
import type { SettingLayers } from './setting-layers.js';
import { boolean, choice, fraction, integer, isLoopbackHost, passthroughUntil, pathSetting } from './setting-values.js';

export interface LegacySettings {
  readonly legacy: Config['legacy'];
  /** Checks adoption against the compatibility profile, once it is read. */
  checkAdoption(profile: CompatProfile, profileGiven: boolean): void;
}

export function readLegacySettings(layers: SettingLayers): LegacySettings {
  const setting = (key: string, envName: string, fallback: number, min: number, max: number): number =>
    integer(layers.read(`legacy.${key}`, envName), fallback, min, max);

  // --- lazy migration ---
  const urlSource = layers.read('legacy.url', 'SVCAPI_LEGACY_URL');
  const url = urlSource?.value.trim() ?? null;
  const urlKey = urlSource?.key ?? 'legacy.url';
  const protocol = url !== null && URL.canParse(url) ? new URL(url).protocol : '';
  if (url !== null && !/^https?:$/.test(protocol)) {
    throw new ConfigError(urlKey, `expected the old service's http(s) URL, like https://old.example/Authentication.asmx, got ${JSON.stringify(url)}`);
  }
  const timeoutMs = setting('timeoutMs', 'SVCAPI_LEGACY_TIMEOUT_MS', 3000, 100, 60_000);
  // Lazy migration sends the passwords of logins unknown here to the old service: in clear over
  // plain http. Allowed to the same machine (a local proxy or tunnel); elsewhere only when the
  // operator says so, and serve still warns at start.
  const allowInsecure = boolean(layers.read('legacy.allowInsecure', 'SVCAPI_LEGACY_ALLOW_INSECURE'), false);
  if (url !== null && protocol === 'http:' && !isLoopbackHost(new URL(url).hostname) && !allowInsecure) {
    throw new ConfigError(urlKey, `plain http to another host would send passwords in clear; use https, or set legacy.allowInsecure (SVCAPI_LEGACY_ALLOW_INSECURE=true) to accept that risk`);
  }
  const caSource = layers.read('legacy.caFile', 'SVCAPI_LEGACY_CA_FILE');
  const caFile = pathSetting(caSource);
  if (caFile !== null && protocol !== 'https:') {
    throw new ConfigError(caSource?.key ?? 'legacy.caFile', 'a CA file is for an https legacy.url; set SVCAPI_LEGACY_URL (legacy.url) to the old service\'s https address');
  }

  // --- token passthrough and adoption (docs/cutover.md#passthrough) ---
  const passthroughSource = layers.read('legacy.tokenPassthrough', 'SVCAPI_LEGACY_TOKEN_PASSTHROUGH');
  const tokenPassthroughUntil = passthroughUntil(passthroughSource);
  if (tokenPassthroughUntil !== null && url === null) {
    throw new ConfigError(passthroughSource?.key ?? 'legacy.tokenPassthrough', 'token passthrough asks the old service: set SVCAPI_LEGACY_URL (legacy.url) too');
  }
  const passthroughCacheSeconds = setting('passthroughCacheSeconds', 'SVCAPI_LEGACY_PASSTHROUGH_CACHE_SECONDS', 60, 0, 3600);
  const passthroughNegativeCacheSeconds = setting('passthroughNegativeCacheSeconds', 'SVCAPI_LEGACY_PASSTHROUGH_NEGATIVE_CACHE_SECONDS', 10, 0, 3600);
  const adoptSource = layers.read('legacy.adoptTokens', 'SVCAPI_LEGACY_ADOPT_TOKENS');
  const adoptTokens = boolean(adoptSource, false);
  const adoptKey = adoptSource?.key ?? 'legacy.adoptTokens';
  if (adoptTokens && tokenPassthroughUntil === null) {
    throw new ConfigError(adoptKey, 'adoption stores tokens token passthrough vouched for: set SVCAPI_LEGACY_TOKEN_PASSTHROUGH (legacy.tokenPassthrough) to its end date too');
  }
  const maxConcurrent = setting('maxConcurrent', 'SVCAPI_LEGACY_MAX_CONCURRENT', 16, 1, 1024);
  const tokenTimeoutMs = setting('tokenTimeoutMs', 'SVCAPI_LEGACY_TOKEN_TIMEOUT_MS', 1000, 100, 60_000);
  const circuitFailures = setting('circuitFailures', 'SVCAPI_LEGACY_CIRCUIT_FAILURES', 5, 1, 1000);
  const circuitCooldownMs = setting('circuitCooldownMs', 'SVCAPI_LEGACY_CIRCUIT_COOLDOWN_MS', 30_000, 1000, 3_600_000);

  // --- shadow and front modes (docs/cutover.md "Front and shadow") ---
  const modeSource = layers.read('legacy.mode', 'SVCAPI_LEGACY_MODE');
  const mode = choice(modeSource, 'serve', ['serve', 'front'] as const, 'legacy.mode', 'serve or front');
  const frontSource = layers.read('legacy.frontOperations', 'SVCAPI_LEGACY_FRONT_OPERATIONS');
  const frontOperations = frontSource === undefined ? [] : frontSource.value.split(/[\s,]+/).filter((n) => n !== '');
  const frontKey = frontSource?.key ?? 'legacy.frontOperations';
  const knownOperations: readonly string[] = OPERATIONS.map((op) => op.name);
  const unknownOperation = frontOperations.find((n) => !knownOperations.includes(n));
  if (unknownOperation !== undefined) throw new ConfigError(frontKey, `expected operation names (${knownOperations.join(', ')}), got ${JSON.stringify(unknownOperation)}`);
  if (frontOperations.length > 0 && mode !== 'front') throw new ConfigError(frontKey, 'names the operations the old service answers in front mode: set legacy.mode to front too');
  const rateSource = layers.read('legacy.shadow.rate', 'SVCAPI_LEGACY_SHADOW_RATE');
  // Front mode compares every request unless told otherwise: that is what it is for.
  const rate = fraction(rateSource, mode === 'front' ? 1 : 0);
  if ((mode === 'front' || rate > 0) && url === null) {
    throw new ConfigError(mode === 'front' ? (modeSource?.key ?? 'legacy.mode') : (rateSource?.key ?? 'legacy.shadow.rate'), 'needs the old service\'s URL in legacy.url (SVCAPI_LEGACY_URL)');
  }
  const shadow = {
    rate,
    queue: setting('shadow.queue', 'SVCAPI_LEGACY_SHADOW_QUEUE', 256, 1, 100_000),
    concurrency: setting('shadow.concurrency', 'SVCAPI_LEGACY_SHADOW_CONCURRENCY', 64, 1, 256),
    keep: setting('shadow.keep', 'SVCAPI_LEGACY_SHADOW_KEEP', 100, 1, 100_000),
    stateful: boolean(layers.read('legacy.shadow.stateful', 'SVCAPI_LEGACY_SHADOW_STATEFUL'), false),
    maxResponseBytes: setting('shadow.maxResponseBytes', 'SVCAPI_LEGACY_SHADOW_MAX_RESPONSE_BYTES', 1_048_576, 1024, 64 * 1_048_576),
    cpuShare: fraction(layers.read('legacy.shadow.cpuShare', 'SVCAPI_LEGACY_SHADOW_CPU_SHARE'), 0),
  };

  return {
    legacy: {
      url, timeoutMs, allowInsecure, caFile, tokenPassthroughUntil, passthroughCacheSeconds, passthroughNegativeCacheSeconds, adoptTokens,
      maxConcurrent, tokenTimeoutMs, circuitFailures, circuitCooldownMs, mode, frontOperations, shadow,
    },
    checkAdoption(profile, profileGiven) {
      // Adoption reads the old ValidateUserTokenJSON's owner and expiry through the profile's token
      // layout: without a member for each, there is nothing honest to store.
      if (!adoptTokens) return;
      const fields = new Set(profile.json.validateUserToken.success.flatMap((m) => ('field' in m.value ? [m.value.field] : [])));
      const missing = (['login', 'expiresAt'] as const).filter((f) => !fields.has(f));
      if (missing.length > 0) {
        throw new ConfigError(adoptKey, `adoption needs the old service's ValidateUserTokenJSON to tell the token's owner and expiry, but the compatibility profile's json.validateUserToken.success has no member with ${missing.map((f) => `{"field": "${f}"}`).join(' and none with ')}${profileGiven ? '' : ' (no profile is given: set compat.profile, SVCAPI_COMPAT, to the old service\'s; docs/compat-profile.md)'}`);
      }
    },
  };
}
