/**
 * A .NET System.Data.DataTable as ASMX serializes it (DataTable.WriteXmlSchema + WriteXml with
 * XmlWriteMode.DiffGram): an inline `xs:schema` describing a DataSet `NewDataSet` whose main
 * table is the table, then a `diffgr:diffgram` holding `DocumentElement` with one element per
 * row (`diffgr:id="News1"`, `msdata:rowOrder="0"`), self-closed when there are no rows.
 *
 * Two layouts: compact (inside SOAP envelopes, no newlines) and indented (the HTTP GET/POST
 * document, two spaces and CRLF as XmlTextWriter writes on .NET). The schema part of both is
 * rendered once at start-up from the contract's column list; a call renders only the rows.
 */
import type { ColumnSpec, ColumnType } from '../contract/operations.js';
import { escapeXmlText } from './xml-text.js';

export const MSDATA_NS = 'urn:schemas-microsoft-com:xml-msdata';
export const DIFFGR_NS = 'urn:schemas-microsoft-com:xml-diffgram-v1';
const XS_NS = 'http://www.w3.org/2001/XMLSchema';
const CRLF = '\r\n';

/** One cell: ints as numbers, strings, dateTime as Date; null omits the element, as DataSet does for DBNull. */
export type Cell = number | string | Date | null;
export type Row = readonly Cell[];

export interface TableSpec {
  readonly dataSetName: string;
  readonly tableName: string;
  readonly columns: readonly ColumnSpec[];
}

export interface DataTableWriter {
  /** Schema + diffgram on one line, for SOAP. */
  compact(rows: readonly Row[]): string;
  /** Schema + diffgram indented, each line prefixed by `indent` plus nesting; no leading or trailing newline. */
  indented(rows: readonly Row[], indent: string): string;
}

const XS_TYPE: Readonly<Record<ColumnType, string>> = { int: 'xs:int', string: 'xs:string', dateTime: 'xs:dateTime' };

/** The schema as a list of [depth, line] pairs; compact joins them, indented prefixes them. */
function schemaLines(spec: TableSpec): Array<[number, string]> {
  const cols = spec.columns.map((c): [number, string] => [8, `<xs:element name="${c.name}" type="${XS_TYPE[c.type]}" minOccurs="0" />`]);
  return [
    [0, `<xs:schema id="${spec.dataSetName}" xmlns="" xmlns:xs="${XS_NS}" xmlns:msdata="${MSDATA_NS}">`],
    [1, `<xs:element name="${spec.dataSetName}" msdata:IsDataSet="true" msdata:MainDataTable="${spec.tableName}" msdata:UseCurrentLocale="true">`],
    [2, '<xs:complexType>'],
    [3, '<xs:choice minOccurs="0" maxOccurs="unbounded">'],
    [4, `<xs:element name="${spec.tableName}">`],
    [5, '<xs:complexType>'],
    [6, '<xs:sequence>'],
    ...cols.map(([, line]): [number, string] => [7, line]),
    [6, '</xs:sequence>'],
    [5, '</xs:complexType>'],
    [4, '</xs:element>'],
    [3, '</xs:choice>'],
    [2, '</xs:complexType>'],
    [1, '</xs:element>'],
    [0, '</xs:schema>'],
  ];
}

const DIFFGRAM_ATTRS = `xmlns:msdata="${MSDATA_NS}" xmlns:diffgr="${DIFFGR_NS}"`;

/**
 * Formats a DateTime the way DataSet writes a local DateTime: `yyyy-MM-ddTHH:mm:ss`, fractional
 * seconds only when non-zero (trailing zeros trimmed), then the zone's UTC offset for that
 * instant as `+hh:mm` (never `Z`; README "DateTime values").
 */
export function compileDateTimeFormatter(timeZone: string): (value: Date) => string {
  const fmt = new Intl.DateTimeFormat('en-US', { timeZone, timeZoneName: 'longOffset' });
  // A zone's offset only changes on the hour (or half hour) in practice, but never within a
  // quarter hour: the Intl lookup (slow) is done once per quarter hour seen, the rest is arithmetic.
  const offsets = new Map<number, number>();
  const offsetMinutes = (ms: number): number => {
    const bucket = Math.floor(ms / 900_000);
    let minutes = offsets.get(bucket);
    if (minutes === undefined) {
      const name = fmt.formatToParts(new Date(bucket * 900_000)).find((p) => p.type === 'timeZoneName')?.value ?? '';
      const m = /GMT([+-])(\d{2}):(\d{2})/.exec(name);
      minutes = m ? (m[1] === '-' ? -1 : 1) * (Number(m[2]) * 60 + Number(m[3])) : 0;
      if (offsets.size >= 4096) offsets.clear();
      offsets.set(bucket, minutes);
    }
    return minutes;
  };
  const two = (n: number): string => (n < 10 ? `0${n}` : String(n));
  return (value: Date): string => {
    const utcMs = value.getTime();
    const minutes = offsetMinutes(utcMs);
    const local = new Date(utcMs + minutes * 60_000);
    const year = String(local.getUTCFullYear()).padStart(4, '0');
    const ms = local.getUTCMilliseconds();
    const fraction = ms === 0 ? '' : `.${String(ms).padStart(3, '0').replace(/0+$/, '')}`;
    const abs = Math.abs(minutes);
    const offset = `${minutes < 0 ? '-' : '+'}${two(Math.floor(abs / 60))}:${two(abs % 60)}`;
    return `${year}-${two(local.getUTCMonth() + 1)}-${two(local.getUTCDate())}T${two(local.getUTCHours())}:${two(local.getUTCMinutes())}:${two(local.getUTCSeconds())}${fraction}${offset}`;
  };
}

export function compileDataTableWriter(spec: TableSpec, timeZone: string): DataTableWriter {
  const formatDate = compileDateTimeFormatter(timeZone);
  const lines = schemaLines(spec);
  const schemaCompact = lines.map(([, l]) => l).join('');
  const openTags = spec.columns.map((c) => `<${c.name}>`);
  const closeTags = spec.columns.map((c) => `</${c.name}>`);
  const emptyTags = spec.columns.map((c) => `<${c.name} />`);
  const table = spec.tableName;

  function cellText(cell: Cell): string {
    if (cell instanceof Date) return formatDate(cell);
    if (typeof cell === 'number') return String(cell);
    return escapeXmlText(cell ?? '');
  }

  function rowOpen(index: number): string {
    return `<${table} diffgr:id="${table}${index + 1}" msdata:rowOrder="${index}">`;
  }

  function cells(row: Row, indent: string | null): string {
    let out = '';
    for (let c = 0; c < spec.columns.length; c++) {
      const cell = row[c] ?? null;
      if (cell === null) continue;
      const text = cellText(cell);
      const element = text === '' ? emptyTags[c] : `${openTags[c]}${text}${closeTags[c]}`;
      out += indent === null ? element : `${CRLF}${indent}${element}`;
    }
    return out;
  }

  return Object.freeze({
    compact(rows: readonly Row[]): string {
      if (rows.length === 0) return `${schemaCompact}<diffgr:diffgram ${DIFFGRAM_ATTRS} />`;
      let body = '';
      for (let i = 0; i < rows.length; i++) body += `${rowOpen(i)}${cells(rows[i] ?? [], null)}</${table}>`;
      return `${schemaCompact}<diffgr:diffgram ${DIFFGRAM_ATTRS}><DocumentElement xmlns="">${body}</DocumentElement></diffgr:diffgram>`;
    },
    indented(rows: readonly Row[], indent: string): string {
      const pad = (depth: number): string => indent + '  '.repeat(depth);
      const schema = lines.map(([depth, l]) => pad(depth) + l).join(CRLF);
      if (rows.length === 0) return `${schema}${CRLF}${pad(0)}<diffgr:diffgram ${DIFFGRAM_ATTRS} />`;
      let body = '';
      for (let i = 0; i < rows.length; i++) {
        body += `${CRLF}${pad(2)}${rowOpen(i)}${cells(rows[i] ?? [], pad(3))}${CRLF}${pad(2)}</${table}>`;
      }
      return (
        `${schema}${CRLF}${pad(0)}<diffgr:diffgram ${DIFFGRAM_ATTRS}>${CRLF}${pad(1)}<DocumentElement xmlns="">` +
        `${body}${CRLF}${pad(1)}</DocumentElement>${CRLF}${pad(0)}</diffgr:diffgram>`
      );
    },
  });
}
