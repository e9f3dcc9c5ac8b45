/**
 * What `compat learn` reads into a legacy service's answers: pure functions from answer texts
 * (and the facts the caller knows: the login, the AppID, the token it was given) to the pieces
 * of a compatibility profile (src/contract/compat-profile.ts). Each says what it could not
 * decide rather than guessing silently.
 */
import type {
  JsonMember,
  JsonOperationProfile,
  NewsColumn,
  NewsColumnType,
  NewsTableProfile,
  NewsValueSource,
  TokenForm,
} from '../contract/compat-profile.js';
import type { XmlElement } from '../wire/xml-reader.js';

// --- tokens ------------------------------------------------------------------------------------

export interface RecognisedToken {
  readonly form: TokenForm;
  /** Undecided when the text had no letters (a-f) to show its case. */
  readonly notes: readonly string[];
}

function letterCase(hex: string): 'lower' | 'upper' | 'mixed' | 'none' {
  const lower = /[a-f]/.test(hex);
  const upper = /[A-F]/.test(hex);
  return lower && upper ? 'mixed' : lower ? 'lower' : upper ? 'upper' : 'none';
}

/** True for one hex digit repeated (Guid.Empty and friends): a "no" value, never a token. */
export function isDegenerate(text: string): boolean {
  return /^(.)\1*$/.test(text.replace(/[^0-9a-fA-F]/g, '').toLowerCase());
}

/**
 * The form of a token: a GUID (D, N or B form, as .NET writes one) or 32 to 128 hex digits.
 * 32 digits are read as a GUID in N form when they carry the version-4 marks Guid.NewGuid sets
 * (a `4` at the 13th digit, one of `89ab` at the 17th), as plain hex otherwise.
 */
export function recogniseTokenForm(text: string): RecognisedToken | null {
  const guid = /^(\{)?([0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12})(\})?$/.exec(text);
  const hex = /^[0-9a-fA-F]{32,128}$/.test(text) ? text : null;
  const digits = guid?.[2] ?? hex;
  if (digits === null || digits === undefined || isDegenerate(digits)) return null;
  if (guid !== null && (guid[1] === undefined) !== (guid[3] === undefined)) return null;
  const found = letterCase(digits);
  if (found === 'mixed') return null;
  const notes = found === 'none' ? ['its letter case (the token had no letters a-f; lower-case assumed)'] : [];
  const wordCase = found === 'upper' ? 'upper' : 'lower';
  if (guid !== null) return { form: { kind: 'guid', case: wordCase, dashes: true, braces: guid[1] !== undefined }, notes };
  if (digits.length === 32 && digits[12] === '4' && /[89abAB]/.test(digits[16] ?? '')) {
    return { form: { kind: 'guid', case: wordCase, dashes: false, braces: false }, notes };
  }
  return { form: { kind: 'hex', length: digits.length, case: wordCase }, notes };
}

/** Any token-like value inside a longer text: a GUID in any form, or a run of 32 to 128 hex digits. */
export const TOKEN_LIKE = /\{[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}\}|(?<![0-9A-Za-z])(?:[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}|[0-9a-fA-F]{32,128})(?![0-9A-Za-z])/g;

// --- JSON results ------------------------------------------------------------------------------

export interface JsonFacts {
  /** The answer is to a call that succeeded (good credentials, a valid token). */
  readonly success: boolean;
  readonly operation: 'validateUser' | 'validateUserToken';
  /** The token the call was given (ValidateUserTokenJSON); a successful ValidateUserJSON's new token is recognised by its form. */
  readonly token: string | null;
  readonly login: string | null;
  /** The AppID the token was issued for (a number equal to it in a success is that fact). */
  readonly appId?: number | null;
}

export interface RecognisedJson {
  readonly members: readonly JsonMember[];
  readonly dates: JsonOperationProfile['dates'] | null;
  readonly escaping: JsonOperationProfile['escaping'] | null;
}

const MS_AJAX_DATE = /^\/Date\(-?\d+\)\/$/;
const WCF_DATE = /^\/Date\(-?\d+[+-]\d{4}\)\/$/;
const ISO_DATE = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}(:\d{2}(\.\d+)?)?(Z|[+-]\d{2}:?\d{2})?$/;

export function jsonDateForm(value: string): JsonOperationProfile['dates'] | null {
  if (MS_AJAX_DATE.test(value)) return 'ms-ajax';
  if (WCF_DATE.test(value)) return 'wcf';
  if (ISO_DATE.test(value)) return 'iso';
  return null;
}

/** The escaping a JSON text shows, if any string in it holds a character the three differ on. */
function observedEscaping(raw: string): JsonOperationProfile['escaping'] | null {
  if (/\\u00(3c|3e|26|27|3C|3E)/.test(raw)) return 'javascript-serializer';
  // A `\/` outside the date forms: DataContractJsonSerializer escapes every solidus.
  if (/\\\//.test(raw.replace(/"\\\/Date\([^)]*\)\\\/"/g, '""'))) return 'data-contract';
  const strings = raw.match(/"(?:[^"\\]|\\.)*"/g) ?? [];
  if (strings.some((s) => /[<>&']/.test(s))) return 'standard';
  return null;
}

/** The layout of one JSON answer: members in order, each a fact of the answer or a constant. */
export function recogniseJson(raw: string, facts: JsonFacts): RecognisedJson | string {
  let parsed: unknown;
  try {
    parsed = JSON.parse(raw);
  } catch {
    return 'not JSON';
  }
  if (parsed === null || typeof parsed !== 'object' || Array.isArray(parsed)) return 'not a JSON object';
  const members: JsonMember[] = [];
  let dates: JsonOperationProfile['dates'] | null = null;
  for (const [key, value] of Object.entries(parsed as Record<string, unknown>)) {
    if (value !== null && typeof value === 'object') return `member ${JSON.stringify(key)} is not a plain value`;
    const v = value as string | number | boolean | null;
    if (facts.success && v === true) {
      members.push({ key, value: { field: facts.operation === 'validateUser' ? 'success' : 'valid' } });
    } else if (typeof v === 'string' && ((facts.token !== null && v === facts.token) || (facts.success && facts.operation === 'validateUser' && recogniseTokenForm(v) !== null))) {
      members.push({ key, value: { field: 'token' } });
    } else if (typeof v === 'string' && facts.success && jsonDateForm(v) !== null) {
      dates = jsonDateForm(v);
      members.push({ key, value: { field: 'expiresAt' } });
    } else if (typeof v === 'string' && facts.login !== null && facts.login !== '' && v === facts.login) {
      members.push({ key, value: { field: 'login' } });
    } else if (typeof v === 'number' && facts.success && facts.appId !== undefined && facts.appId !== null && v === facts.appId) {
      members.push({ key, value: { field: 'appId' } });
    } else {
      members.push({ key, value: { const: v } });
    }
  }
  return { members, dates, escaping: observedEscaping(raw) };
}

// --- the login URL -----------------------------------------------------------------------------

export interface LoginUrlFacts {
  readonly token: string;
  readonly appId: number;
  readonly login: string;
  /** A second answer to the same call: a ticket changes between them, a derived value does not. */
  readonly again: string | null;
}

export interface RecognisedLoginUrl {
  readonly template: string;
  readonly notes: readonly string[];
}

function decodeComponent(text: string): string {
  try {
    return decodeURIComponent(text.replace(/\+/g, ' '));
  } catch {
    return text;
  }
}

/**
 * The URL as a template: the caller's token, the AppID, the login and a one-time ticket
 * (a token-like value that is not the caller's token) become {token}, {appId}, {login} and
 * {ticket} wherever they are a whole query value or a whole path segment; the rest is kept as is.
 */
export function recogniseLoginUrl(url: string, facts: LoginUrlFacts): RecognisedLoginUrl | string {
  if (!URL.canParse(url) || !/^https?:$/.test(new URL(url).protocol)) return 'not an absolute http(s) URL';
  if (/[{}\s]/.test(url)) return 'contains braces or white space, which a template cannot carry';
  const notes: string[] = [];
  const tickets: string[] = [];
  const place = (raw: string): string => {
    const value = decodeComponent(raw);
    if (value === '') return raw;
    if (value.toLowerCase() === facts.token.toLowerCase()) return '{token}';
    if (value === String(facts.appId)) return '{appId}';
    if (value.toLowerCase() === facts.login.toLowerCase()) return '{login}';
    if (recogniseTokenForm(value) !== null) {
      tickets.push(value);
      return '{ticket}';
    }
    return raw;
  };
  const hashAt = url.indexOf('#');
  const fragment = hashAt < 0 ? '' : url.slice(hashAt);
  const beforeFragment = hashAt < 0 ? url : url.slice(0, hashAt);
  const q = beforeFragment.indexOf('?');
  const pathPart = q < 0 ? beforeFragment : beforeFragment.slice(0, q);
  const query = q < 0 ? null : beforeFragment.slice(q + 1);
  const origin = /^https?:\/\/[^/]*/.exec(pathPart)?.[0] ?? '';
  const path = pathPart.slice(origin.length).split('/').map((segment) => place(segment)).join('/');
  const templatedQuery = query === null ? '' : `?${query.split('&').map((pair) => {
    const eq = pair.indexOf('=');
    return eq < 0 ? pair : `${pair.slice(0, eq + 1)}${place(pair.slice(eq + 1))}`;
  }).join('&')}`;
  const template = `${origin}${path}${templatedQuery}${fragment}`;
  if (tickets.length > 1) return 'holds more than one token-like value besides the token';
  if (tickets.length === 1) {
    if (facts.again === null) notes.push('whether {ticket} is one-time (no second answer to compare)');
    else if (facts.again.includes(tickets[0] ?? '')) notes.push('{ticket}: the same token-like value came back twice, so it is not a one-time ticket; svcapi-auth will write a one-time ticket there');
  }
  if (!template.includes('{token}') && !template.includes('{ticket}')) notes.push('the URL carries neither the token nor a ticket: the target page cannot know the user');
  return { template, notes };
}

// --- the WhatsNew table --------------------------------------------------------------------------

export const XS_TYPES: Readonly<Record<string, NewsColumnType>> = {
  int: 'int', long: 'long', string: 'string', dateTime: 'dateTime', boolean: 'boolean', decimal: 'decimal', double: 'double',
};

type NewsField = Extract<NewsValueSource, { field: string }>['field'];

/** Well-known column names (English, Portuguese, Spanish), compared without case, accents or punctuation. */
const FIELD_NAMES: ReadonlyArray<readonly [NewsField, readonly NewsColumnType[], readonly string[]]> = [
  ['newsId', ['int', 'long'], ['id', 'newsid', 'idnews', 'idnoticia', 'noticiaid', 'idnoticias', 'idnovedad', 'novedadid', 'idnovidade', 'novidadeid', 'codnoticia', 'codigonoticia', 'itemid', 'iditem']],
  ['appId', ['int', 'long'], ['appid', 'idapp', 'applicationid', 'idaplicacao', 'idaplicacion', 'aplicacaoid', 'aplicacionid', 'idaplicativo', 'aplicativoid', 'idsistema', 'sistemaid']],
  ['title', ['string'], ['title', 'titulo', 'headline', 'subject', 'assunto', 'asunto', 'caption', 'nome', 'nombre', 'name']],
  ['body', ['string'], ['body', 'text', 'texto', 'content', 'contents', 'conteudo', 'contenido', 'message', 'mensagem', 'mensaje', 'description', 'descricao', 'descripcion', 'corpo', 'cuerpo', 'detail', 'detalhe', 'detalle', 'summary', 'resumo', 'resumen']],
  ['language', ['string'], ['language', 'lang', 'idioma', 'lingua', 'culture', 'cultura', 'locale', 'languagecode']],
  ['url', ['string'], ['url', 'link', 'href', 'uri', 'enlace', 'linkurl', 'urllink', 'endereco']],
  ['publishedAt', ['dateTime'], ['publishedat', 'published', 'publishdate', 'publicationdate', 'datepublished', 'pubdate', 'date', 'data', 'fecha', 'datapublicacao', 'dtpublicacao', 'fechapublicacion', 'datapublicacion', 'createdat', 'created', 'datecreated', 'datacriacao', 'fechacreacion', 'datacadastro', 'dtcadastro', 'datahora', 'fechahora', 'datetime', 'datainicio', 'fechainicio', 'startdate']],
  ['expiresAt', ['dateTime'], ['expiresat', 'expires', 'expiration', 'expirationdate', 'expirydate', 'dataexpiracao', 'dtexpiracao', 'datavalidade', 'validade', 'validuntil', 'fechaexpiracion', 'fechavencimiento', 'datafim', 'datafinal', 'fechafin', 'enddate']],
  ['minVersion', ['string'], ['minversion', 'versaominima', 'versionminima', 'minappversion', 'fromversion']],
  ['maxVersion', ['string'], ['maxversion', 'versaomaxima', 'versionmaxima', 'maxappversion', 'toversion']],
  ['membersOnly', ['boolean'], ['membersonly', 'somentemembros', 'solomiembros', 'restricted', 'restrito', 'restringido']],
];

function nameKey(name: string): string {
  return name.normalize('NFD').replace(/[\u0300-\u036f]/g, '').toLowerCase().replace(/[^a-z0-9]/g, '');
}

export interface RecognisedNewsTable {
  readonly table: NewsTableProfile;
  readonly rows: number;
  /** The UTC offset the DateTime values carried, e.g. "-03:00" (zone), when there was one. */
  readonly offset: string | null;
  readonly notes: readonly string[];
}

const DIFFGR_NS = 'urn:schemas-microsoft-com:xml-diffgram-v1';
const MSDATA_NS = 'urn:schemas-microsoft-com:xml-msdata';
const XS_NS = 'http://www.w3.org/2001/XMLSchema';

function attr(element: XmlElement, ns: string, local: string): string | undefined {
  return element.attributes.find((a) => a.ns === ns && a.local === local)?.value;
}

function elementsNamed(element: XmlElement, ns: string, local: string, out: XmlElement[] = []): XmlElement[] {
  for (const c of element.children) {
    if (c.ns === ns && c.local === local) out.push(c);
    elementsNamed(c, ns, local, out);
  }
  return out;
}

/**
 * The table's schema as a DataTable writes it (inline xs:schema, then a diffgram): data set and
 * table names, the columns with their XSD types, each mapped to a news field by its name or
 * kept as a per-item attribute; the DateTime form from the first value seen.
 */
export function recogniseNewsTable(result: XmlElement): RecognisedNewsTable | string {
  const schema = result.children.find((c) => c.ns === XS_NS && c.local === 'schema');
  if (schema === undefined) return 'no inline xs:schema: not a serialised DataTable';
  const dataSet = schema.children.find((c) => c.ns === XS_NS && c.local === 'element' && attr(c, MSDATA_NS, 'IsDataSet') === 'true');
  if (dataSet === undefined) return 'the schema declares no data set';
  const dataSetName = attr(dataSet, '', 'name') ?? '';
  const tableName = attr(dataSet, MSDATA_NS, 'MainDataTable')?.replace(/^.*:/, '') ?? '';
  const tableElement = elementsNamed(dataSet, XS_NS, 'element').find((e) => attr(e, '', 'name') === tableName);
  if (tableElement === undefined || tableName === '') return 'the schema names no main table';
  const sequence = elementsNamed(tableElement, XS_NS, 'sequence')[0];
  const declared = sequence === undefined ? [] : sequence.children.filter((c) => c.ns === XS_NS && c.local === 'element');
  if (declared.length === 0) return `table ${tableName} has no columns`;
  const notes: string[] = [];
  const taken = new Set<NewsField>();
  const columns: NewsColumn[] = [];
  for (const column of declared) {
    const name = attr(column, '', 'name') ?? '';
    const xsType = (attr(column, '', 'type') ?? '').replace(/^.*:/, '');
    let type = XS_TYPES[xsType];
    if (type === undefined) {
      type = ['short', 'byte', 'unsignedByte', 'unsignedShort'].includes(xsType) ? 'int' : xsType === 'float' ? 'double' : 'string';
      notes.push(`column ${name}: XSD type ${xsType || '(none)'} written as ${type}`);
    }
    const key = nameKey(name);
    const match = FIELD_NAMES.find(([field, types, names]) => !taken.has(field) && types.includes(type) && names.includes(key));
    if (match !== undefined) {
      taken.add(match[0]);
      columns.push({ name, type, from: { field: match[0] } });
    } else {
      const attributeName = /^[A-Za-z0-9_.-]{1,64}$/.test(name) ? name : name.replace(/[^A-Za-z0-9_.-]/g, '_').slice(0, 64);
      columns.push({ name, type, from: { attribute: attributeName } });
    }
  }
  for (const field of ['title', 'publishedAt'] as const) {
    if (!taken.has(field)) notes.push(`which column holds the news ${field} (no column name was recognised; every unrecognised column is kept as an attribute)`);
  }

  const diffgram = result.children.find((c) => c.ns === DIFFGR_NS && c.local === 'diffgram');
  const container = diffgram?.children.find((c) => c.ns === '' && (c.local === 'DocumentElement' || c.local === dataSetName));
  const rows = container?.children.filter((c) => c.local === tableName) ?? [];
  let dateTimes: NewsTableProfile['dateTimes'] = 'zone';
  let offset: string | null = null;
  const dateColumns = columns.filter((c) => c.type === 'dateTime').map((c) => c.name);
  const sample = rows.flatMap((r) => r.children.filter((c) => dateColumns.includes(c.local)).map((c) => c.text.trim()))[0];
  if (sample === undefined) {
    if (dateColumns.length > 0) notes.push('the DateTime form (no row had a date; local time with its offset assumed)');
  } else if (/Z$/.test(sample)) {
    dateTimes = 'utc';
  } else if (/[+-]\d{2}:\d{2}$/.test(sample)) {
    offset = sample.slice(-6);
  } else {
    dateTimes = 'unspecified';
  }
  if (rows.length === 0) notes.push('which values the table holds (it came back with no rows)');
  return { table: { dataSetName, tableName, columns, dateTimes, maxRows: null }, rows: rows.length, offset, notes };
}
