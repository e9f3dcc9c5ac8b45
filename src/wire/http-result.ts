/**
 * HTTP GET/POST result documents as ASMX writes them (XmlReturnWriter with an indenting
 * XmlTextWriter; CRLF on .NET): the XML declaration, a newline, then the root element named
 * after the result's XSD type in the service namespace: `<string xmlns="SVCAPI">...</string>`
 * (self-closed when empty), `<boolean xmlns="SVCAPI">true</boolean>`, or
 * `<DataTable xmlns="SVCAPI">` holding the indented schema and diffgram.
 */
import type { CompiledContract, CompiledOperation, ResultValue } from './compiled-contract.js';
import type { Row } from './datatable.js';
import { escapeXmlText } from './xml-text.js';
import { encodeTableOnce, renderTableOnce } from './table-memo.js';

const DECL = '<?xml version="1.0" encoding="utf-8"?>\r\n';

const tableText = (contract: CompiledContract, rows: readonly Row[]): string =>
  `${DECL}<DataTable xmlns="${contract.namespace}">\r\n${contract.table.indented(rows, '  ')}\r\n</DataTable>`;

export function writeHttpResult(contract: CompiledContract, operation: CompiledOperation, value: ResultValue): string {
  const ns = contract.namespace;
  switch (operation.spec.result) {
    case 'string': {
      const text = escapeXmlText(String(value));
      return text === '' ? `${DECL}<string xmlns="${ns}" />` : `${DECL}<string xmlns="${ns}">${text}</string>`;
    }
    case 'boolean':
      return httpBooleanText(ns, value === true);
    case 'DataTable': {
      const rows = value as readonly Row[];
      return renderTableOnce(rows, operation, () => tableText(contract, rows));
    }
  }
}

/** A boolean result document: `<boolean xmlns="SVCAPI">true</boolean>`. */
export function httpBooleanText(namespace: string, value: boolean): string {
  return `${DECL}<boolean xmlns="${namespace}">${value ? 'true' : 'false'}</boolean>`;
}

/**
 * writeHttpResult as the server writes it: text for a string, one of the contract's two
 * compiled documents for a boolean, bytes (encoded once when frozen) for a table; shared
 * Buffers, never to be modified. See writeSoapResultBody.
 */
export function writeHttpResultBody(contract: CompiledContract, operation: CompiledOperation, value: ResultValue): string | Buffer {
  switch (operation.spec.result) {
    case 'string':
      return writeHttpResult(contract, operation, value);
    case 'boolean':
      return contract.httpBooleanBodies[value === true ? 1 : 0];
    case 'DataTable': {
      const rows = value as readonly Row[];
      return encodeTableOnce(rows, operation, () => tableText(contract, rows));
    }
  }
}
