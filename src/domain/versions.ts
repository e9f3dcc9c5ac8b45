/**
 * Application versions as WhatsNew compares them: dotted non-negative integers ("2", "2.5",
 * "10.0.3"), compared component by component as numbers, missing components counting as 0
 * (so 2.5 == 2.5.0). Components may be arbitrarily long; no precision is lost.
 */

/** A parsed version: components without leading zeros, trailing zero components removed. */
export type Version = readonly string[];

const STRICT = /^\d{1,30}(?:\.\d{1,30}){0,9}$/;
const LEADING = /^\s*(\d{1,30}(?:\.\d{1,30}){0,9})/;

function normalise(text: string): Version {
  const parts = text.split('.').map((p) => p.replace(/^0+(?=\d)/, ''));
  while (parts.length > 1 && parts[parts.length - 1] === '0') parts.pop();
  return parts;
}

/** A version an operator gives for a news item: the whole string must be dotted numbers. */
export function parseVersion(text: string): Version | null {
  return STRICT.test(text) ? normalise(text) : null;
}

/**
 * The version a client reports in AppVersion. Clients send things like "2.5.1-beta" or
 * "3.0 (build 77)", so the leading dotted numbers are taken; null when there are none.
 */
export function parseClientVersion(text: string): Version | null {
  const match = LEADING.exec(text);
  return match?.[1] === undefined ? null : normalise(match[1]);
}

function compareComponent(a: string, b: string): number {
  if (a.length !== b.length) return a.length < b.length ? -1 : 1;
  return a < b ? -1 : a > b ? 1 : 0;
}

/** Negative, zero or positive, like a sort comparator. */
export function compareVersions(a: Version, b: Version): number {
  const length = Math.max(a.length, b.length);
  for (let i = 0; i < length; i++) {
    const c = compareComponent(a[i] ?? '0', b[i] ?? '0');
    if (c !== 0) return c;
  }
  return 0;
}

/**
 * Whether a news item with these inclusive bounds is shown to a client reporting `appVersion`.
 * An empty or missing AppVersion matches everything. A non-empty AppVersion without a readable
 * version matches only items that have no bounds, since we cannot tell where it falls.
 */
export function versionInRange(appVersion: string | null, minVersion: string | null, maxVersion: string | null): boolean {
  if (minVersion === null && maxVersion === null) return true;
  if (appVersion === null || appVersion.trim() === '') return true;
  const client = parseClientVersion(appVersion);
  if (client === null) return false;
  if (minVersion !== null) {
    const min = parseVersion(minVersion);
    if (min !== null && compareVersions(client, min) < 0) return false;
  }
  if (maxVersion !== null) {
    const max = parseVersion(maxVersion);
    if (max !== null && compareVersions(client, max) > 0) return false;
  }
  return true;
}

/**
 * All that versionInRange reads of a client's AppVersion, as a short string: two AppVersions
 * with the same key are admitted by exactly the same items. '' for a missing or blank one (sees
 * everything), '-' for one without a readable version, else the normalised dotted numbers
 * (at most ten components of 30 digits, whatever the client sent). Used to key cached answers.
 */
export function clientVersionKey(appVersion: string | null): string {
  if (appVersion === null || appVersion.trim() === '') return '';
  const client = parseClientVersion(appVersion);
  return client === null ? '-' : client.join('.');
}
