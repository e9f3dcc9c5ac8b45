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
 * writeSoapResult as the server writes it: a string result as text (encoded by the server as it
 * writes), a boolean result as one of the frame's two compiled envelopes, a table as UTF-8
 * bytes, encoded once for a frozen table (WhatsNew's answers) and then the same Buffer every
 * time. Buffers returned are shared: never modify them. Encoding 50 kB of XML would cost more
 * than the rest of a WhatsNew; concatenating and encoding ValidateUserToken's envelope cost 1-4%
 * of its CPU (docs/fast-paths.md, "Compiled contract").
 */
export function writeSoapResultBody(contract: CompiledContract, operation: CompiledOperation, version: SoapVersion, value: ResultValue): string | Buffer {
  const frame = operation.soap[version];
  switch (operation.spec.result) {
    case 'string':
      return writeSoapResult(contract, operation, version, value);
    case 'boolean':
      return frame.booleanBodies[value === true ? 1 : 0];
    case 'DataTable': {
      const rows = value as readonly Row[];
      return encodeTableOnce(rows, frame, () => tableText(contract, frame, rows));
    }
  }
}
