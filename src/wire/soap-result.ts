/** SOAP responses for a successful call: the precompiled frame around the encoded result. */
import type { CompiledContract, CompiledOperation, ResultValue } from './compiled-contract.js';
import type { Row } from './datatable.js';
import { writeSoapString, type SoapVersion } from './soap-envelope.js';

export function writeSoapResult(contract: CompiledContract, operation: CompiledOperation, version: SoapVersion, value: ResultValue): string {
  const frame = operation.soap[version];
  switch (operation.spec.result) {
    case 'string':
      return writeSoapString(frame, String(value));
    case 'boolean':
      return frame.open + (value === true ? 'true' : 'false') + frame.close;
    case 'DataTable':
      return frame.open + contract.table.compact(value as readonly Row[]) + frame.close;
  }
}
