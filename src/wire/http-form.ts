/**
 * HTTP GET (`/Authentication.asmx/Op?name=value`) and HTTP POST (form body) requests, decoded as
 * ASMX's HttpGetServerProtocol / HttpPostServerProtocol do:
 * - the method name in the path is case-sensitive (a case-only mismatch gets its own message);
 * - GET reads only the query string, POST only an `application/x-www-form-urlencoded` body;
 * - every declared parameter is required (an empty value is a value), names match
 *   case-insensitively, repeated names are joined with "," (NameValueCollection), unknown
 *   names are ignored, ints go through Convert.ChangeType (surrounding white space allowed);
 * - the first failing parameter in declaration order decides the error.
 * Result documents are written in http-result.ts; errors as text/plain in http-error.ts.
 */
import { TextDecoder } from 'node:util';
import type { ParamValue } from '../contract/operations.js';
import type { CompiledContract, CompiledOperation } from './compiled-contract.js';
import { parseClrInt32 } from './dotnet-int.js';
import { parseMediaType } from './media-type.js';
import type { WireError } from './wire-errors.js';

/** A NameValueCollection: keys compared case-insensitively, repeated keys joined with ",". */
export class FormCollection {
  private readonly values = new Map<string, string>();

  add(name: string, value: string): void {
    const key = name.toLowerCase();
    const existing = this.values.get(key);
    this.values.set(key, existing === undefined ? value : `${existing},${value}`);
  }

  get(name: string): string | undefined {
    return this.values.get(name.toLowerCase());
  }

  static readonly EMPTY: FormCollection = new FormCollection();
}


function hexValue(code: number): number {
  if (code >= 48 && code <= 57) return code - 48;
  if (code >= 65 && code <= 70) return code - 55;
  if (code >= 97 && code <= 102) return code - 87;
  return -1;
}

const UTF8 = new TextDecoder('utf-8', { fatal: false });

/**
 * HttpUtility.UrlDecode: `+` is a space, `%XX` a byte, `%uXXXX` a UTF-16 unit; a malformed
 * escape stays as it is (never an error); bytes are UTF-8 with U+FFFD for bad sequences.
 */
export function urlDecode(text: string): string {
  if (text.indexOf('%') < 0 && text.indexOf('+') < 0) return text;
  let out = '';
  const bytes: number[] = [];
  const flush = (): void => {
    if (bytes.length > 0) {
      out += UTF8.decode(Uint8Array.from(bytes));
      bytes.length = 0;
    }
  };
  for (let i = 0; i < text.length; i++) {
    const ch = text.charCodeAt(i);
    if (ch === 43 /* + */) {
      flush();
      out += ' ';
    } else if (ch === 37 /* % */) {
      if (text.charCodeAt(i + 1) === 117 /* u */ && i + 5 < text.length) {
        const h = [2, 3, 4, 5].map((k) => hexValue(text.charCodeAt(i + k)));
        if (h.every((v) => v >= 0)) {
          flush();
          out += String.fromCharCode(((h[0] ?? 0) << 12) | ((h[1] ?? 0) << 8) | ((h[2] ?? 0) << 4) | (h[3] ?? 0));
          i += 5;
          continue;
        }
      }
      const hi = hexValue(text.charCodeAt(i + 1));
      const lo = hexValue(text.charCodeAt(i + 2));
      if (hi >= 0 && lo >= 0) {
        bytes.push((hi << 4) | lo);
        i += 2;
      } else {
        flush();
        out += '%';
      }
    } else {
      flush();
      out += text[i];
    }
  }
  flush();
  return out;
}

/** Parses `a=1&b=2` (a query string without `?`, or a form body) into a collection. */
export function parseUrlEncoded(text: string): FormCollection {
  const collection = new FormCollection();
  if (text === '') return collection;
  for (const pair of text.split('&')) {
    if (pair === '') continue;
    const eq = pair.indexOf('=');
    // A bare `name` has a null key in ASP.NET's HttpValueCollection: unreachable by name.
    if (eq < 0) continue;
    collection.add(urlDecode(pair.slice(0, eq)), urlDecode(pair.slice(eq + 1)));
  }
  return collection;
}

export type HttpMethodLookup = { readonly ok: true; readonly operation: CompiledOperation } | { readonly ok: false; readonly error: WireError };

/** `methodName` is the path after `/Authentication.asmx/`, trailing slash and all, as ASMX sees PathInfo. */
export function lookupHttpMethod(contract: CompiledContract, methodName: string): HttpMethodLookup {
  const operation = contract.byName.get(methodName);
  if (operation) return { ok: true, operation };
  const other = contract.byLowerName.get(methodName.toLowerCase());
  if (other) return { ok: false, error: { code: 'METHOD_NAME_CASE', methodName, correctName: other.name } };
  return { ok: false, error: { code: 'INVALID_METHOD_NAME', methodName } };
}

export type FormBodyRead = { readonly ok: true; readonly form: FormCollection } | { readonly ok: false; readonly error: WireError };

/** The HTTP POST protocol accepts only form bodies; a JSON body is a script-service call ASMX refuses. */
export function readFormBody(body: Uint8Array, contentType: string | undefined): FormBodyRead {
  const media = parseMediaType(contentType);
  if (media.type === 'application/x-www-form-urlencoded') {
    return { ok: true, form: parseUrlEncoded(Buffer.from(body.buffer, body.byteOffset, body.byteLength).toString('utf8')) };
  }
  if (media.type === 'application/json') return { ok: false, error: { code: 'SCRIPT_SERVICE_REQUIRED' } };
  return { ok: false, error: { code: 'REQUEST_FORMAT_INVALID', contentType: contentType ?? '' } };
}

export type HttpArgs = { readonly ok: true; readonly args: readonly ParamValue[] } | { readonly ok: false; readonly error: WireError };

/** Binds the operation's parameters from a collection, in declaration order. */
export function bindHttpArgs(operation: CompiledOperation, values: FormCollection): HttpArgs {
  const args: ParamValue[] = [];
  for (const param of operation.spec.params) {
    const raw = values.get(param.name);
    if (raw === undefined) return { ok: false, error: { code: 'MISSING_PARAMETER', name: param.name } };
    if (param.type === 'string') {
      args.push(raw);
    } else {
      const parsed = parseClrInt32(raw);
      if (!parsed.ok) return { ok: false, error: { code: 'CANNOT_CONVERT', value: raw, reason: parsed.reason } };
      args.push(parsed.value);
    }
  }
  return { ok: true, args };
}
