/**
 * Reads a DataTable as ASMX sends it (inline xs:schema + diffgram; datatable.ts writes the same
 * shape) out of another service's WhatsNew answer: `svcapi-auth news import --from-legacy`. The
 * text comes from across a trust boundary, so it is read like a request: through xml-reader.ts
 * (no DTD, bounded depth and element count), and every way it can be wrong is a value naming
 * what was wrong, never an exception. Cell text is returned as written; what it means is the
 * profile's business (src/domain/news-import.ts).
 */
import type { NewsColumnType } from '../contract/compat-profile.js';
import { DIFFGR_NS, MSDATA_NS } from './datatable.js';
import { attributeValue, readXmlDocument, type XmlElement, type XmlReadLimits } from './xml-reader.js';

const SOAP11 = 'http://schemas.xmlsoap.org/soap/envelope/';
const XS_NS = 'http://www.w3.org/2001/XMLSchema';

export interface DataTableColumnInfo {
  readonly name: string;
  /** The XSD type as the schema names it (`xs:int` -> 'int'); null for a type no profile column has. */
  readonly type: NewsColumnType | null;
  readonly xsdType: string;
}

export interface ReadDataTable {
  readonly dataSetName: string;
  /** msdata:MainDataTable, else the first table element of the schema. */
  readonly tableName: string;
  readonly columns: readonly DataTableColumnInfo[];
  /** Rows in document order: column name -> text. A column without an element (DBNull) is absent. */
  readonly rows: readonly ReadonlyMap<string, string>[];
}

export type DataTableRead = { readonly ok: true; readonly table: ReadDataTable } | { readonly ok: false; readonly reason: string };

const XSD_TYPES: Readonly<Record<string, NewsColumnType>> = {
  int: 'int', long: 'long', string: 'string', dateTime: 'dateTime', boolean: 'boolean', decimal: 'decimal', double: 'double',
};

/** Text from the other side, fit to quote in a message: one line, printable, short. */
export function quoteUntrusted(text: string, max = 200): string {
  // eslint-disable-next-line no-control-regex
  const flat = text.replace(/[\u0000-\u001f\u007f-\u009f\u2028\u2029]+/g, ' ').trim();
  return JSON.stringify(flat.length > max ? `${flat.slice(0, max)}...` : flat);
}

function child(element: XmlElement | undefined, ns: string, local: string): XmlElement | undefined {
  return element?.children.find((c) => c.ns === ns && c.local === local);
}

function descendants(element: XmlElement, pick: (e: XmlElement) => boolean, out: XmlElement[] = []): XmlElement[] {
  for (const c of element.children) {
    if (pick(c)) out.push(c);
    descendants(c, pick, out);
  }
  return out;
}

/** The table described by an inline `xs:schema` of a DataTable. */
function readSchema(schema: XmlElement): { dataSetName: string; tableName: string; columns: DataTableColumnInfo[] } | string {
  const dataSet = schema.children.find((e) => e.ns === XS_NS && e.local === 'element' && attributeValue(e, MSDATA_NS, 'IsDataSet') === 'true');
  if (dataSet === undefined) return 'the schema describes no DataSet (no xs:element with msdata:IsDataSet="true")';
  const dataSetName = attributeValue(dataSet, '', 'name') ?? '';
  const tables = descendants(dataSet, (e) => e.ns === XS_NS && e.local === 'element' && child(e, XS_NS, 'complexType') !== undefined);
  const main = attributeValue(dataSet, MSDATA_NS, 'MainDataTable');
  // MainDataTable may be namespace-qualified (`ns:Table`) when the table has a namespace.
  const table = tables.find((t) => attributeValue(t, '', 'name') === main?.replace(/^.*:/, '')) ?? tables[0];
  if (table === undefined) return 'the schema describes no table';
  const tableName = attributeValue(table, '', 'name') ?? '';
  const sequence = child(child(table, XS_NS, 'complexType'), XS_NS, 'sequence');
  const columns = (sequence?.children ?? []).filter((e) => e.ns === XS_NS && e.local === 'element').map((e): DataTableColumnInfo => {
    const xsdType = attributeValue(e, '', 'type') ?? '';
    return { name: attributeValue(e, '', 'name') ?? '', xsdType, type: XSD_TYPES[xsdType.replace(/^.*:/, '')] ?? null };
  });
  return { dataSetName, tableName, columns };
}

/**
 * The DataTable inside `result` (the element holding `xs:schema` then `diffgr:diffgram`, as
 * WhatsNewResult does). At most `maxRows` rows are read.
 */
export function readDataTableElement(result: XmlElement, maxRows: number): DataTableRead {
  const schemaElement = child(result, XS_NS, 'schema');
  if (schemaElement === undefined) return { ok: false, reason: 'the result holds no inline xs:schema (is it a DataTable?)' };
  const schema = readSchema(schemaElement);
  if (typeof schema === 'string') return { ok: false, reason: schema };
  const diffgram = child(result, DIFFGR_NS, 'diffgram');
  if (diffgram === undefined) return { ok: false, reason: 'the result holds no diffgr:diffgram' };
  // The data's container is DocumentElement (a table alone) or the DataSet's name; diffgr:before
  // and diffgr:errors hold earlier versions and errors of rows, not rows.
  const container = diffgram.children.find((e) => e.ns !== DIFFGR_NS);
  const rowElements = (container?.children ?? []).filter((e) => e.local === schema.tableName);
  if (rowElements.length > maxRows) return { ok: false, reason: `the answer holds ${rowElements.length} rows, more than the ${maxRows} asked for` };
  const rows = rowElements.map((row) => {
    const cells = new Map<string, string>();
    for (const cell of row.children) if (!cells.has(cell.local)) cells.set(cell.local, cell.text);
    return cells;
  });
  return { ok: true, table: { ...schema, rows } };
}

/** Elements a WhatsNew answer of `maxRows` rows of up to 64 columns can need, with room for the envelope and schema. */
export function dataTableLimits(maxRows: number): XmlReadLimits {
  return { maxDepth: 32, maxElements: 2000 + maxRows * 80 };
}

/** The DataTable of a SOAP 1.1 `<WhatsNewResponse>` (namespace `serviceNamespace`), or why there is none. */
export function readWhatsNewResponse(xml: string, serviceNamespace: string, maxRows: number): DataTableRead {
  const doc = readXmlDocument(xml, dataTableLimits(maxRows));
  if (!doc.ok) {
    const why = { empty: 'an empty document', malformed: 'not well-formed XML', dtd: 'XML with a DTD (refused)', 'too-large': 'XML nested too deep or with too many elements' }[doc.reason];
    return { ok: false, reason: `the answer is ${why}` };
  }
  if (doc.root.ns !== SOAP11 || doc.root.local !== 'Envelope') return { ok: false, reason: 'the answer is not a SOAP 1.1 envelope' };
  const body = child(doc.root, SOAP11, 'Body');
  const fault = child(body, SOAP11, 'Fault');
  if (fault !== undefined) return { ok: false, reason: `the service answered a SOAP fault: ${quoteUntrusted(fault.children.find((c) => c.local === 'faultstring')?.text ?? '')}` };
  const result = child(child(body, serviceNamespace, 'WhatsNewResponse'), serviceNamespace, 'WhatsNewResult');
  if (result === undefined) return { ok: false, reason: 'the answer holds no WhatsNewResponse/WhatsNewResult' };
  return readDataTableElement(result, maxRows);
}
