/**
 * The one place where an error of the catalogue (wire-errors.ts) becomes status, headers and
 * bytes, per binding. Successful results are framed here too so that every response of the
 * service carries the same header rules: `Cache-Control: private, max-age=0` on successes and
 * `private` on errors, as ASMX sets them.
 */
import { htmlEncode } from './xml-text.js';
import { messageChain, type WireError } from './wire-errors.js';
import { SOAP_CONTENT_TYPE, writeSoapFault, type SoapVersion } from './soap-envelope.js';
import { INVALID_URL_PAGE, METHOD_NOT_ALLOWED_PAGE, NOT_FOUND_PAGE, RUNTIME_ERROR_PAGE, SERVICE_UNAVAILABLE_PAGE } from './error-pages.js';

export interface WireResponse {
  readonly status: number;
  readonly contentType: string;
  readonly cacheControl: string;
  /** Text, or bytes already encoded (a rendered table, shared: never modified). */
  readonly body: string | Buffer;
  readonly headers?: Readonly<Record<string, string>>;
}

export const XML_CONTENT_TYPE = 'text/xml; charset=utf-8';
const TEXT_CONTENT_TYPE = 'text/plain; charset=utf-8';
const HTML_CONTENT_TYPE = 'text/html';
export const CACHE_SUCCESS = 'private, max-age=0';
export const CACHE_ERROR = 'private';
/** Responses of operations whose result can be a token or ticket (deviation: a security decision). */
export const CACHE_SECRET = 'no-store';

export function success(contentType: string, body: string | Buffer, carriesSecret = false): WireResponse {
  return { status: 200, contentType, cacheControl: carriesSecret ? CACHE_SECRET : CACHE_SUCCESS, body };
}

/** Errors on the SOAP bindings: bare 400/415, the pipeline page for JSON posts, else a fault. */
export function soapErrorResponse(version: SoapVersion, error: WireError): WireResponse {
  switch (error.code) {
    case 'SOAP_UNREADABLE':
      return { status: 400, contentType: SOAP_CONTENT_TYPE[version], cacheControl: CACHE_ERROR, body: '' };
    case 'SOAP_UNSUPPORTED_MEDIA_TYPE':
      return { status: 415, contentType: XML_CONTENT_TYPE, cacheControl: CACHE_ERROR, body: '' };
    case 'SCRIPT_SERVICE_REQUIRED':
      return pageResponse(500);
    default: {
      const fault = writeSoapFault(version, error);
      return { status: 500, contentType: SOAP_CONTENT_TYPE[fault.version], cacheControl: fault.cacheControl, body: fault.body };
    }
  }
}

/**
 * Errors on the HTTP GET/POST bindings: 500 text/plain, each message of the chain HTML-encoded
 * and joined with " ---> ", then a newline (HttpServerProtocol.WriteException on .NET).
 */
export function httpErrorResponse(error: WireError): WireResponse {
  const body = messageChain(error, 'http').map(htmlEncode).join(' ---> ') + '\r\n';
  return { status: 500, contentType: TEXT_CONTENT_TYPE, cacheControl: CACHE_ERROR, body };
}

/** HTML pages of IIS / the ASP.NET pipeline (400: http.sys's invalid URL page; 503: http.sys's, no application). */
export function pageResponse(status: 400 | 404 | 405 | 500 | 503): WireResponse {
  switch (status) {
    case 400:
      return { status, contentType: 'text/html; charset=us-ascii', cacheControl: CACHE_ERROR, body: INVALID_URL_PAGE };
    case 404:
      return { status, contentType: HTML_CONTENT_TYPE, cacheControl: CACHE_ERROR, body: NOT_FOUND_PAGE };
    case 405:
      return { status, contentType: HTML_CONTENT_TYPE, cacheControl: CACHE_ERROR, body: METHOD_NOT_ALLOWED_PAGE, headers: { allow: 'GET, HEAD, POST' } };
    case 500:
      return { status, contentType: HTML_CONTENT_TYPE, cacheControl: CACHE_ERROR, body: RUNTIME_ERROR_PAGE };
    case 503:
      return { status, contentType: 'text/html; charset=us-ascii', cacheControl: CACHE_ERROR, body: SERVICE_UNAVAILABLE_PAGE };
  }
}
