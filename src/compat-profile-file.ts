/**
 * Reads a compatibility profile file (`serve --compat FILE`, `SVCAPI_COMPAT`, config key
 * `compat.profile`; docs/compat-profile.md): JSON of the shape of src/contract/compat-profile.ts.
 * Every key is optional; what a file leaves out keeps svcapi-auth's own choice, and a list (JSON
 * members, news columns) replaces the default list whole. Validated once, at start: the first
 * problem found is an error naming its key (`whatsNew.columns[2].type: ...`), and an unknown key
 * is an error too (a typo must not silently keep a default a client would break on).
 */
import { readFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import type { z } from 'zod';
import { DEFAULT_COMPAT_PROFILE, deepFreeze, type CompatProfile, type NewsColumnType, type TokenForm } from './contract/compat-profile.js';
import { compileCellWriters, type CellWriter } from './wire/datatable-values.js';
import { isTokenInForm } from './domain/token-form.js';

export class CompatProfileError extends Error {
  constructor(readonly key: string, readonly reason: string, readonly file: string | null = null) {
    super(`invalid compatibility profile${file === null ? '' : ` ${file}`}: ${key === '' ? '' : `${key}: `}${reason}`);
    this.name = 'CompatProfileError';
  }
}

/**
 * Token forms by name, as .NET writes a Guid: `guid` ToString() (lower-case D), `GUID` its
 * ToUpper(), `guid-n` / `GUID-N` ToString("N"), `{guid}` / `{GUID}` ToString("B"); `hexNN` /
 * `HEXNN` NN random hex digits (32 to 128).
 */
export function parseTokenFormName(name: string): TokenForm | null {
  const hex = /^(hex|HEX)(\d{2,3})$/.exec(name);
  if (hex) {
    const length = Number(hex[2]);
    if (length < 32 || length > 128) return null;
    return { kind: 'hex', length, case: hex[1] === 'hex' ? 'lower' : 'upper' };
  }
  const guid = /^(\{)?(guid|GUID)(-[nN])?(\})?$/.exec(name);
  if (!guid || (guid[1] === undefined) !== (guid[4] === undefined) || (guid[1] !== undefined && guid[3] !== undefined)) return null;
  return { kind: 'guid', case: guid[2] === 'guid' ? 'lower' : 'upper', dashes: guid[3] === undefined, braces: guid[1] !== undefined };
}

/** The name parseTokenFormName reads back, for `compat learn` and messages. */
export function tokenFormName(form: TokenForm): string {
  const upper = form.case === 'upper';
  if (form.kind === 'hex') return `${upper ? 'HEX' : 'hex'}${form.length}`;
  const base = `${upper ? 'GUID' : 'guid'}${form.dashes ? '' : upper ? '-N' : '-n'}`;
  return form.braces === true ? `{${base}}` : base;
}

const NCNAME = /^[A-Za-z_][A-Za-z0-9._-]*$/;
const PLACEHOLDER = /\{([^{}]*)\}/g;
const PLACEHOLDERS = new Set(['ticket', 'token', 'appId', 'login', 'loginUrl']);

/**
 * The file's schema, built on first use with zod loaded then: zod cost ~150 ms of CPU at every
 * start (2026-11-26), and only a start with a profile file (or `compat learn`) reads one.
 */
let builtSchema: ReturnType<typeof buildProfileSchema> | undefined;
function profileSchemaOnce(): ReturnType<typeof buildProfileSchema> {
  builtSchema ??= buildProfileSchema((createRequire(import.meta.url)('zod') as { z: Zod }).z);
  return builtSchema;
}

type Zod = typeof z;

// eslint-disable-next-line @typescript-eslint/explicit-function-return-type -- the schema's type is what zod infers
function buildProfileSchema(z: Zod) {
  const tokenForm = z.union([
    z.string().transform((name, ctx) => {
      const form = parseTokenFormName(name);
      if (form === null) {
        ctx.addIssue({ code: 'custom', message: `unknown token form ${JSON.stringify(name)}; expected guid, GUID, guid-n, GUID-N, {guid}, {GUID}, or hexNN / HEXNN with NN from 32 to 128` });
        return z.NEVER;
      }
      return form;
    }),
    z.strictObject({ kind: z.literal('guid'), case: z.enum(['lower', 'upper']), dashes: z.boolean(), braces: z.boolean() }),
    z.strictObject({ kind: z.literal('hex'), length: z.number().int().min(32).max(128), case: z.enum(['lower', 'upper']) }),
  ]);

  type JsonField = 'success' | 'valid' | 'token' | 'expiresAt' | 'login' | 'appId';

  const constValue = z.strictObject({ const: z.union([z.string(), z.number(), z.boolean(), z.null()]) });

  /**
   * Members of a layout. A success may hold the operation's facts; a failure only constants, as it
   * is one text for every reason (a fact such as the login would tell one failure from another).
   */
  function jsonMembers(fields: readonly JsonField[] | null): z.ZodType {
    const fieldValue = z.strictObject({ field: z.string() }).superRefine((value, ctx) => {
      if (fields === null) ctx.addIssue({ code: 'custom', path: ['field'], message: 'a failure answer holds constants only ({"const": ...}): it is the same text for every reason' });
      else if (!(fields as readonly string[]).includes(value.field)) ctx.addIssue({ code: 'custom', path: ['field'], message: `unknown field ${JSON.stringify(value.field)} here; expected ${fields.join(', ')}` });
    });
    return z.array(z.strictObject({ key: z.string(), value: z.union([constValue, fieldValue]) })).superRefine((members, ctx) => {
      const seen = new Set<string>();
      members.forEach((m, i) => {
        if (seen.has(m.key)) ctx.addIssue({ code: 'custom', path: [i, 'key'], message: `key ${JSON.stringify(m.key)} appears twice` });
        seen.add(m.key);
      });
    });
  }

  function jsonOperation(names: readonly string[], credentialSource: 'basic' | 'bearer', fields: readonly JsonField[]): z.ZodType {
    const sources = z.array(z.enum(['query', 'form', 'header', 'cookie', credentialSource])).min(1).superRefine((list, ctx) => {
      if (new Set(list).size !== list.length) ctx.addIssue({ code: 'custom', message: 'a source is listed twice' });
    });
    const nameShape = Object.fromEntries(names.map((n) => [n, z.string().min(1).max(100).optional()]));
    return z.strictObject({
      inputs: z.strictObject({ sources: sources.optional(), names: z.strictObject(nameShape).optional() }).optional(),
      success: jsonMembers(fields).optional(),
      failure: jsonMembers(null).optional(),
      dates: z.enum(['iso', 'ms-ajax', 'wcf']).optional(),
      escaping: z.enum(['standard', 'javascript-serializer', 'data-contract']).optional(),
    });
  }

  const urlTemplate = z.string().min(1).max(2000).superRefine((template, ctx) => {
    for (const match of template.matchAll(PLACEHOLDER)) {
      if (!PLACEHOLDERS.has(match[1] ?? '')) ctx.addIssue({ code: 'custom', message: `unknown placeholder {${match[1]}}; expected {ticket}, {token}, {appId}, {login} or {loginUrl}` });
    }
    const probe = template.replace(PLACEHOLDER, (_all, name: string) => (name === 'loginUrl' ? 'https://app.example/login' : 'x'));
    if (!URL.canParse(probe) || !/^https?:$/.test(new URL(probe).protocol)) {
      ctx.addIssue({ code: 'custom', message: 'must be an absolute http(s) URL once its placeholders are filled' });
    }
    if (/\s/.test(template)) ctx.addIssue({ code: 'custom', message: 'must not contain whitespace' });
  });

  const newsValue = z.union([
    z.strictObject({ field: z.enum(['newsId', 'appId', 'title', 'body', 'language', 'url', 'publishedAt', 'expiresAt', 'minVersion', 'maxVersion', 'membersOnly']) }),
    z.strictObject({ const: z.union([z.string(), z.number(), z.boolean()]) }),
    z.strictObject({ attribute: z.string().regex(/^[A-Za-z0-9_.-]{1,64}$/, 'an attribute name is 1 to 64 letters, digits, _ . -') }),
  ]);
  const newsColumns = z.array(z.strictObject({
    name: z.string().regex(NCNAME, 'must be an XML name (a letter or _, then letters, digits, . _ -)'),
    type: z.enum(['int', 'long', 'string', 'dateTime', 'boolean', 'decimal', 'double']),
    from: newsValue,
  })).min(1).max(64).superRefine((columns, ctx) => {
    const seen = new Set<string>();
    columns.forEach((c, i) => {
      if (seen.has(c.name)) ctx.addIssue({ code: 'custom', path: [i, 'name'], message: `column ${JSON.stringify(c.name)} appears twice` });
      seen.add(c.name);
      // A constant its column cannot hold would be left out of every row: say so now.
      if ('const' in c.from && constantText(c.type, c.from.const) === null) {
        ctx.addIssue({ code: 'custom', path: [i, 'from', 'const'], message: `${JSON.stringify(c.from.const)} is not a value of type ${c.type}` });
      }
    });
  });

  const constantWriters = new Map<string, CellWriter>();
  function constantText(type: NewsColumnType, value: string | number | boolean): string | null {
    let write = constantWriters.get(type);
    if (write === undefined) {
      write = compileCellWriters([type], 'UTC', 'utc')[0] ?? ((): null => null);
      constantWriters.set(type, write);
    }
    return write(value);
  }

  const profileSchema = z.strictObject({
    $schema: z.string().optional(),
    description: z.string().optional(),
    validateUser: z.strictObject({ failureValue: z.string().max(1000).optional() }).optional(),
    tokens: z.strictObject({ form: tokenForm.optional() }).optional(),
    json: z.strictObject({
      validateUser: jsonOperation(['login', 'password', 'appId', 'ipAddress'], 'basic', ['success', 'valid', 'token', 'expiresAt', 'login', 'appId']).optional(),
      // A token check knows whether the token is valid, until when and whose it is; never the token
      // itself (the caller sent it). A legacy whose answer names the owner is what token adoption
      // needs (domain/legacy-token-adoption.ts).
      validateUserToken: jsonOperation(['token'], 'bearer', ['success', 'valid', 'expiresAt', 'login', 'appId']).optional(),
    }).optional(),
    loginUrl: z.strictObject({
      default: urlTemplate.nullable().optional(),
      apps: z.record(z.string().regex(/^-?\d{1,10}$/, 'an application is keyed by its AppID'), urlTemplate.nullable()).optional(),
      none: z.string().max(2000).optional(),
    }).optional(),
    whatsNew: z.strictObject({
      dataSetName: z.string().regex(NCNAME, 'must be an XML name').optional(),
      tableName: z.string().regex(NCNAME, 'must be an XML name').optional(),
      columns: newsColumns.optional(),
      dateTimes: z.enum(['zone', 'unspecified', 'utc']).optional(),
      maxRows: z.number().int().min(1).max(10_000).nullable().optional(),
    }).optional(),
  });
  return profileSchema;
}

type ProfileFile = z.infer<ReturnType<typeof buildProfileSchema>>;

function keyOf(path: readonly PropertyKey[]): string {
  return path.reduce<string>((key, part) => (typeof part === 'number' ? `${key}[${part}]` : key === '' ? String(part) : `${key}.${String(part)}`), '');
}

/** Defaults for what the file leaves out (objects merged key by key, lists and scalars replaced). */
function merge<T>(base: T, override: unknown): T {
  if (override === undefined) return base;
  if (base === null || typeof base !== 'object' || Array.isArray(base) || override === null || typeof override !== 'object' || Array.isArray(override)) return override as T;
  const out: Record<string, unknown> = { ...(base as Record<string, unknown>) };
  for (const [k, v] of Object.entries(override)) out[k] = merge(out[k], v);
  return out as T;
}

/**
 * The issue to report: inside a union (a token form given as a name or an object, a news value
 * from a field, a constant or an attribute), the branch's own issue says more than "invalid
 * input": a custom message first, else the one deepest into the value.
 */
function mostSpecific(issue: z.core.$ZodIssue): { path: PropertyKey[]; message: string; issue: z.core.$ZodIssue } {
  if (issue.code === 'invalid_union' && issue.errors.length > 0) {
    const inner = issue.errors.flat().map((i) => mostSpecific(i));
    const best = inner.find((i) => i.issue.code === 'custom') ?? inner.sort((a, b) => b.path.length - a.path.length)[0];
    if (best !== undefined) return { ...best, path: [...issue.path, ...best.path] };
  }
  return { path: [...issue.path], message: issue.message, issue };
}

/** A profile from parsed JSON; throws CompatProfileError naming the first bad key. */
export function compatProfileFromJson(data: unknown, file: string | null = null): CompatProfile {
  const parsed = profileSchemaOnce().safeParse(data);
  if (!parsed.success) {
    const first = parsed.error.issues[0];
    const { path, message, issue } = first === undefined ? { path: [], message: 'invalid', issue: undefined } : mostSpecific(first);
    const reason = issue?.code === 'unrecognized_keys' ? `unknown key${issue.keys.length > 1 ? 's' : ''} ${issue.keys.map((k) => JSON.stringify(k)).join(', ')}` : message;
    throw new CompatProfileError(keyOf(path), reason, file);
  }
  const { $schema: _schema, description: _description, ...given } = parsed.data as ProfileFile;
  const profile = merge<CompatProfile>(DEFAULT_COMPAT_PROFILE, given);
  // A failure value that reads as one of our tokens would make a failed login look like a success.
  if (isTokenInForm(profile.validateUser.failureValue, profile.tokens.form)) {
    throw new CompatProfileError('validateUser.failureValue', 'must not look like a token in tokens.form (clients could not tell a failure from a success)', file);
  }
  return deepFreeze(profile);
}

/** Reads and validates a profile file. */
export function readCompatProfile(path: string): CompatProfile {
  let text: string;
  try {
    text = readFileSync(path, 'utf8');
  } catch (error) {
    throw new CompatProfileError('', `cannot read the file (${(error as NodeJS.ErrnoException).code ?? 'error'})`, path);
  }
  let data: unknown;
  try {
    data = JSON.parse(text);
  } catch (error) {
    throw new CompatProfileError('', `not JSON (${(error as Error).message})`, path);
  }
  return compatProfileFromJson(data, path);
}
