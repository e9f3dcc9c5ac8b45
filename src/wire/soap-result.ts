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
 * writeSoapResult as UTF-8 bytes, for a server that writes bytes: a frozen table (WhatsNew's
 * answers) is rendered and encoded once, then the same Buffer is returned (never modify it).
 */
export function writeSoapResultBytes(contract: CompiledContract, operation: CompiledOperation, version: SoapVersion, value: ResultValue): Buffer {
  if (operation.spec.result !== 'DataTable') return Buffer.from(writeSoapResult(contract, operation, version, value), 'utf8');
  const frame = operation.soap[version];
  const rows = value as readonly Row[];
  return encodeTableOnce(rows, frame, () => tableText(contract, frame, rows));
}
