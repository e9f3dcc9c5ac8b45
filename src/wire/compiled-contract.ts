/**
 * The contract compiled once at start-up into lookup tables and response frames, so a request
 * costs map lookups and string concatenation only (fastify does the same with its route
 * serializers). Every binding's decoder and encoder works from this, never from per-operation code.
 */
import { DEFAULT_COMPAT_PROFILE, type NewsTableProfile } from '../contract/compat-profile.js';
import { OPERATIONS, SERVICE_NAMESPACE, type OperationName, type OperationSpec } from '../contract/operations.js';
import { compileDataTableWriter, type DataTableWriter, type Row } from './datatable.js';
import { httpBooleanText } from './http-result.js';
import { compileSoapResponseFrame, type SoapResponseFrame, type SoapVersion } from './soap-envelope.js';

export interface CompiledOperation {
  readonly name: OperationName;
  readonly spec: OperationSpec;
  readonly soap: Readonly<Record<SoapVersion, SoapResponseFrame>>;
  /** `SVCAPI/Name`: the SOAPAction (SOAP 1.1) and `action` parameter (SOAP 1.2) value. */
  readonly soapAction: string;
  /** Parameter name -> position, for SOAP element binding (case-sensitive, as XmlSerializer). */
  readonly paramIndex: ReadonlyMap<string, number>;
}

export interface CompiledContract {
  readonly namespace: string;
  readonly operations: readonly CompiledOperation[];
  readonly byName: ReadonlyMap<string, CompiledOperation>;
  /** Lower-cased name -> operation, to word ASMX's "method names are case sensitive" error. */
  readonly byLowerName: ReadonlyMap<string, CompiledOperation>;
  readonly bySoapAction: ReadonlyMap<string, CompiledOperation>;
  readonly table: DataTableWriter;
  /** HTTP GET / POST boolean result documents, [false, true], as UTF-8 bytes (shared: never modify). */
  readonly httpBooleanBodies: readonly [Buffer, Buffer];
}

/** A result value as the domain hands it to the wire: the operation's result type decides which. */
export type ResultValue = string | boolean | readonly Row[];

export interface ContractOptions {
  /** IANA zone whose UTC offset DateTime values carry (the server's local zone on .NET). */
  readonly timeZone: string;
  /** WhatsNew's DataTable: names, column types and sources, DateTime form (compat profile `whatsNew`; default: svcapi-auth's own). */
  readonly newsTable?: NewsTableProfile;
}

export function compileContract(options: ContractOptions, operations: readonly OperationSpec<OperationName>[] = OPERATIONS): CompiledContract {
  const compiled = operations.map((spec): CompiledOperation => {
    const name = spec.name;
    return Object.freeze({
      name,
      spec,
      soap: Object.freeze({
        '1.1': compileSoapResponseFrame('1.1', SERVICE_NAMESPACE, name),
        '1.2': compileSoapResponseFrame('1.2', SERVICE_NAMESPACE, name),
      }),
      soapAction: `${SERVICE_NAMESPACE}/${name}`,
      paramIndex: new Map(spec.params.map((p, i) => [p.name, i])),
    });
  });
  return Object.freeze({
    namespace: SERVICE_NAMESPACE,
    operations: compiled,
    byName: new Map(compiled.map((op) => [op.name, op])),
    byLowerName: new Map(compiled.map((op) => [op.name.toLowerCase(), op])),
    bySoapAction: new Map(compiled.map((op) => [op.soapAction, op])),
    table: compileDataTableWriter(options.newsTable ?? DEFAULT_COMPAT_PROFILE.whatsNew, options.timeZone),
    httpBooleanBodies: Object.freeze([Buffer.from(httpBooleanText(SERVICE_NAMESPACE, false), 'utf8'), Buffer.from(httpBooleanText(SERVICE_NAMESPACE, true), 'utf8')] as const),
  });
}
