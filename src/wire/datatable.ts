/**
 * A .NET System.Data.DataTable as ASMX serializes it (DataTable.WriteXmlSchema + WriteXml with
 * XmlWriteMode.DiffGram): an inline `xs:schema` describing a DataSet (`NewDataSet` by default)
 * whose main table is the table, then a `diffgr:diffgram` holding `DocumentElement` with one
 * element per row (`diffgr:id="News1"`, `msdata:rowOrder="0"`), self-closed when there are no rows.
 *
 * Two layouts: compact (inside SOAP envelopes, no newlines) and indented (the HTTP GET/POST
 * document, two spaces and CRLF as XmlTextWriter writes on .NET). The schema part of both is
 * rendered once at start-up from the table's column list (the compatibility profile's
 * `whatsNew`); a call renders only the rows. Each cell is written as DataSet writes a value of
 * its column's type (XmlConvert, datatable-values.ts); a value the type cannot hold is left out,
 * as DataSet leaves out DBNull, rather than written where a .NET reader would fail on it.
 */
import type { NewsColumnType, NewsTableProfile } from '../contract/compat-profile.js';
import { compileCellWriters, type Cell } from './datatable-values.js';
import { escapeXmlText } from './xml-text.js';

export { compileDateTimeFormatter, type Cell } from './datatable-values.js';

export const MSDATA_NS = 'urn:schemas-microsoft-com:xml-msdata';
export const DIFFGR_NS = 'urn:schemas-microsoft-com:xml-diffgram-v1';
const XS_NS = 'http://www.w3.org/2001/XMLSchema';
const CRLF = '\r\n';

export type Row = readonly Cell[];

export interface TableSpec {
  readonly dataSetName: string;
  readonly tableName: string;
  readonly columns: readonly { readonly name: string; readonly type: NewsColumnType }[];
  /** How DateTime cells are written (NewsTableProfile.dateTimes); 'zone' when absent. */
  readonly dateTimes?: NewsTableProfile['dateTimes'];
}

export interface DataTableWriter {
  /** Schema + diffgram on one line, for SOAP. */
  compact(rows: readonly Row[]): string;
  /** Schema + diffgram indented, each line prefixed by `indent` plus nesting; no leading or trailing newline. */
  indented(rows: readonly Row[], indent: string): string;
}

/** The XSD type DataTable.WriteXmlSchema writes for each column type. */
const XS_TYPE: Readonly<Record<NewsColumnType, string>> = {
  int: 'xs:int', long: 'xs:long', string: 'xs:string', dateTime: 'xs:dateTime', boolean: 'xs:boolean', decimal: 'xs:decimal', double: 'xs:double',
};

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

export function compileDataTableWriter(spec: TableSpec, timeZone: string): DataTableWriter {
  const writers = compileCellWriters(spec.columns.map((c) => c.type), timeZone, spec.dateTimes ?? 'zone');
  const lines = schemaLines(spec);
  const schemaCompact = lines.map(([, l]) => l).join('');
  const openTags = spec.columns.map((c) => `<${c.name}>`);
  const closeTags = spec.columns.map((c) => `</${c.name}>`);
  const emptyTags = spec.columns.map((c) => `<${c.name} />`);
  const table = spec.tableName;

  function rowOpen(index: number): string {
    return `<${table} diffgr:id="${table}${index + 1}" msdata:rowOrder="${index}">`;
  }

  function cells(row: Row, indent: string | null): string {
    let out = '';
    for (let c = 0; c < spec.columns.length; c++) {
      const raw = writers[c]?.(row[c] ?? null) ?? null;
      if (raw === null) continue;
      const text = escapeXmlText(raw);
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
