/**
 * The JSON texts of ValidateUserJSON and ValidateUserTokenJSON, as the compatibility profile lays
 * them out (src/contract/compat-profile.ts, docs/compat-profile.md): members in the profile's
 * order, strings escaped and dates written as the .NET serializer of the old service did.
 *
 * Compiled once at start from the JsonOperationProfile, like the rest of src/wire: keys and
 * constants are encoded then, so a request only encodes its own facts. The failure text is one
 * string fixed at start (one answer for every reason, byte for byte).
 */
import type { JsonMember, JsonOperationProfile } from '../contract/compat-profile.js';

/** What a successful answer may say. A fact the operation does not have is null. */
export interface JsonResultFacts {
  readonly token: string | null;
  readonly expiresAt: Date;
  /** The login as the user record has it. */
  readonly login: string | null;
  /** The token's application (ValidateUserJSON: the AppID asked for). */
  readonly appId: number | null;
}

export interface CompiledJsonResult {
  success(facts: JsonResultFacts): string;
  readonly failure: string;
}

type Escaping = JsonOperationProfile['escaping'];
type Dates = JsonOperationProfile['dates'];

function hex4(code: number): string {
  return `\\u${code.toString(16).padStart(4, '0')}`;
}

const SHORT_ESCAPES: Readonly<Record<string, string>> = { '\b': '\\b', '\t': '\\t', '\n': '\\n', '\f': '\\f', '\r': '\\r', '"': '\\"', '\\': '\\\\' };

/**
 * .NET's JavaScriptSerializer (HttpUtility.JavaScriptStringEncode, .NET 4.5 and later): \b \t \n
 * \f \r \" \\ as short escapes; every other control character, the HTML-sensitive ' < > &, and
 * the newlines U+0085 U+2028 U+2029 as \u00XX (lower-case hex).
 */
// eslint-disable-next-line no-control-regex -- control characters are what it escapes
const JAVASCRIPT_SERIALIZER_SPECIAL = /[\u0000-\u001f"\\'<>&\u0085\u2028\u2029]/g;

/**
 * DataContractJsonSerializer (XmlJsonWriter): " / \ with a backslash; control characters, every
 * UTF-16 surrogate (even a valid pair), U+FFFE, U+FFFF and U+0085 U+2028 U+2029 as \uXXXX
 * (lower-case hex, no short forms such as \n).
 */
// eslint-disable-next-line no-control-regex -- control characters are what it escapes
const DATA_CONTRACT_SPECIAL = /[\u0000-\u001f"/\\\u0085\u2028\u2029\ud800-\udfff\ufffe\uffff]/g;

/** A JSON string literal (with its quotes) for `text`, escaped as `escaping` does. */
export function jsonString(text: string, escaping: Escaping): string {
  switch (escaping) {
    case 'standard':
      return JSON.stringify(text);
    case 'javascript-serializer':
      return `"${text.replace(JAVASCRIPT_SERIALIZER_SPECIAL, (c) => SHORT_ESCAPES[c] ?? hex4(c.charCodeAt(0)))}"`;
    case 'data-contract':
      return `"${text.replace(DATA_CONTRACT_SPECIAL, (c) => (c === '"' || c === '/' || c === '\\' ? `\\${c}` : hex4(c.charCodeAt(0))))}"`;
  }
}

/**
 * A date as the serializer writes a DateTime: ISO 8601 UTC; JavaScriptSerializer's
 * `"\/Date(ms)\/"`; DataContractJsonSerializer's `"\/Date(ms+0000)\/"`. The backslashes are
 * part of the JSON text (an escaped `/`, which a JSON parser reads as `/Date(...)/`).
 */
export function jsonDate(date: Date, dates: Dates): string {
  switch (dates) {
    case 'iso':
      return `"${date.toISOString()}"`;
    case 'ms-ajax':
      return `"\\/Date(${date.getTime()})\\/"`;
    case 'wcf':
      return `"\\/Date(${date.getTime()}+0000)\\/"`;
  }
}

function jsonConst(value: string | number | boolean | null, escaping: Escaping): string {
  if (typeof value === 'string') return jsonString(value, escaping);
  if (typeof value === 'number' && !Number.isFinite(value)) throw new Error('a JSON constant must be a finite number');
  return JSON.stringify(value);
}

type Part = string | ((facts: JsonResultFacts) => string);

function compileMembers(members: readonly JsonMember[], profile: JsonOperationProfile, layout: 'success' | 'failure'): Part[] {
  const parts: Part[] = [];
  const literal = (text: string): void => {
    const last = parts.length - 1;
    if (typeof parts[last] === 'string') parts[last] += text;
    else parts.push(text);
  };
  literal('{');
  members.forEach((member, i) => {
    literal(`${i === 0 ? '' : ','}${jsonString(member.key, profile.escaping)}:`);
    const source = member.value;
    if ('const' in source) return literal(jsonConst(source.const, profile.escaping));
    // A failure answer is the same text for every reason: it cannot hold a fact of the request.
    if (layout === 'failure') throw new Error(`a failure layout holds constants only (member ${JSON.stringify(member.key)})`);
    switch (source.field) {
      case 'success':
      case 'valid':
        return literal('true');
      case 'expiresAt':
        return parts.push((facts) => jsonDate(facts.expiresAt, profile.dates));
      case 'token':
        return parts.push((facts) => (facts.token === null ? 'null' : jsonString(facts.token, profile.escaping)));
      case 'login':
        return parts.push((facts) => (facts.login === null ? 'null' : jsonString(facts.login, profile.escaping)));
      case 'appId':
        return parts.push((facts) => (facts.appId === null ? 'null' : String(facts.appId)));
    }
  });
  literal('}');
  return parts;
}

/** The encoder of one JSON operation; throws on a profile the loader would have refused. */
export function compileJsonResult(profile: JsonOperationProfile): CompiledJsonResult {
  const failure = compileMembers(profile.failure, profile, 'failure').join('');
  const parts = compileMembers(profile.success, profile, 'success');
  return Object.freeze({
    failure,
    success(facts: JsonResultFacts): string {
      let out = '';
      for (const part of parts) out += typeof part === 'string' ? part : part(facts);
      return out;
    },
  });
}
