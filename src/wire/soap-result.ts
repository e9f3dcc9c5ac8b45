/** SOAP responses for a successful call: the precompiled frame around the encoded result. */
import type { CompiledContract, CompiledOperation, ResultValue } from './compiled-contract.js';
import type { Row } from './datatable.js';
import { writeSoapString, type SoapResponseFrame, type SoapVersion } from './soap-envelope.js';
import { encodeTableOnce, renderTableOnce } from './table-memo.js';

const tableText = (contract: CompiledContract, frame: SoapResponseFrame, rows: readonly Row[]): string => frame.open + contract.table.compact(rows) + frame.close;

export function writeSoapResult(contract: CompiledContract, operation: CompiledOperation, version: SoapVersion, value: ResultValue): string {
  const frame = operation.soap[version];
  switch (operation.spec.result) {
    case 'string':
      return writeSoapString(frame, String(value));
    case 'boolean':
      return frame.open + (value === true ? 'true' : 'false') + frame.close;
    case 'DataTable': {
      const rows = value as readonly Row[];
      return renderTableOnce(rows, frame, () => tableText(contract, frame, rows));
    }
  }
}

/**
 * writeSoapResult as the server writes it: a scalar result as text (the socket write encodes
 * it), a table as UTF-8 bytes, encoded once for a frozen table (WhatsNew's answers) and then the
 * same Buffer every time (never modify it): encoding 50 kB of XML would cost more than the rest.
 */
export function writeSoapResultBody(contract: CompiledContract, operation: CompiledOperation, version: SoapVersion, value: ResultValue): string | Buffer {
  if (operation.spec.result !== 'DataTable') return writeSoapResult(contract, operation, version, value);
  const frame = operation.soap[version];
  const rows = value as readonly Row[];
  return encodeTableOnce(rows, frame, () => tableText(contract, frame, rows));
}
