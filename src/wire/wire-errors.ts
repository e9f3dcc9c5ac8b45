/**
 * The one catalogue of errors an ASMX client can see, with stable codes. Each entry knows its
 * .NET message chain (System.Web.Services / System.Xml texts with placeholders filled, as the
 * .NET Framework prints them; see shared/reference/asmx/README.md "Error message text").
 * How a chain reaches the wire (SOAP 1.1 / 1.2 fault, text/plain, bare status) is decided in
 * one place per binding: soap-fault.ts and http-form.ts.
 */

export type WireError =
  // HTTP GET / HTTP POST (and SOAP routing) -------------------------------------------------
  | { readonly code: 'MISSING_PARAMETER'; readonly name: string }
  | { readonly code: 'CANNOT_CONVERT'; readonly value: string; readonly reason: 'format' | 'overflow' }
  | { readonly code: 'INVALID_METHOD_NAME'; readonly methodName: string }
  | { readonly code: 'METHOD_NAME_CASE'; readonly methodName: string; readonly correctName: string }
  | { readonly code: 'REQUEST_FORMAT_INVALID'; readonly contentType: string }
  | { readonly code: 'REQUEST_FORMAT_UNRECOGNIZED'; readonly urlEnding: string }
  | { readonly code: 'SCRIPT_SERVICE_REQUIRED' }
  | { readonly code: 'REQUEST_TOO_LARGE' }
  // SOAP ---------------------------------------------------------------------------------------
  | { readonly code: 'SOAP_UNREADABLE' }
  | { readonly code: 'SOAP_UNSUPPORTED_MEDIA_TYPE' }
  | { readonly code: 'SOAP_ROOT_MISSING' }
  | { readonly code: 'SOAP_DTD_PROHIBITED' }
  | { readonly code: 'SOAP_VERSION_MISMATCH'; readonly namespace: string }
  | { readonly code: 'SOAP_NO_BODY' }
  | { readonly code: 'SOAP_UNKNOWN_ACTION'; readonly action: string }
  | { readonly code: 'SOAP12_NO_VALID_ACTION' }
  /** The SOAP 1.2 `action` parameter (URL-decoded) named no operation, and neither did the body element. */
  | { readonly code: 'SOAP12_UNKNOWN_ACTION'; readonly action: string }
  | { readonly code: 'SOAP_BAD_PARAMETER'; readonly line: number; readonly column: number; readonly detail: string }
  | { readonly code: 'SOAP_MUST_UNDERSTAND'; readonly header: string }
  // Anything the service itself could not do (store down, overload, a bug) --------------------
  | { readonly code: 'SERVER_ERROR' }
  | { readonly code: 'SERVER_TOO_BUSY' };

export type WireErrorCode = WireError['code'];

const INT_REASON: Readonly<Record<'format' | 'overflow', string>> = {
  format: 'Input string was not in a correct format.',
  overflow: 'Value was either too large or too small for an Int32.',
};

/** .NET writes Environment.NewLine inside ArgumentException messages ("Parameter name: ..."). */
const NL = '\r\n';

/** Which protocol raised the error: a few messages are worded differently per protocol. */
export type ErrorSource = 'soap-1.1' | 'soap-1.2' | 'http';

/** Messages of the exception chain, outermost first; joined with " ---> " on the wire. */
export function messageChain(error: WireError, source: ErrorSource): readonly string[] {
  switch (error.code) {
    case 'MISSING_PARAMETER':
      return [`Missing parameter: ${error.name}.`];
    case 'CANNOT_CONVERT':
      return [`Cannot convert ${error.value} to System.Int32.${NL}Parameter name: type`, INT_REASON[error.reason]];
    case 'INVALID_METHOD_NAME':
      return [`${error.methodName} Web Service method name is not valid.`];
    case 'METHOD_NAME_CASE':
      return [`Invalid method name '${error.methodName}', method names are case sensitive. The method name '${error.correctName}' with the same name but different casing was found.${NL}Parameter name: methodName`];
    case 'REQUEST_FORMAT_INVALID':
      return [`Request format is invalid: ${error.contentType}.`];
    case 'REQUEST_FORMAT_UNRECOGNIZED':
      // What ASMX says for a protocol removed in web.config (here: HttpGet turned off).
      return [`Request format is unrecognized for URL unexpectedly ending in '${error.urlEnding}'.`];
    case 'SCRIPT_SERVICE_REQUIRED':
      return ['Only Web services with a [ScriptService] attribute on the class definition can be called from script.'];
    case 'REQUEST_TOO_LARGE':
      // On SOAP the request stream is first read by the SOAP extension pipeline (f_size_10mb_soap11).
      return source === 'http'
        ? ['Maximum request length exceeded.']
        : ['There was an exception running the extensions specified in the config file.', 'Maximum request length exceeded.'];
    case 'SOAP_UNREADABLE':
    case 'SOAP_UNSUPPORTED_MEDIA_TYPE':
      return [];
    case 'SOAP_ROOT_MISSING':
      return ['Server was unable to process request.', 'Root element is missing.'];
    case 'SOAP_DTD_PROHIBITED':
      return ['Server was unable to process request.', 'DTD is prohibited in this XML document.'];
    case 'SOAP_VERSION_MISMATCH':
      return [`Possible SOAP version mismatch: Envelope namespace ${error.namespace} was unexpected. Expecting http://schemas.xmlsoap.org/soap/envelope/.`];
    case 'SOAP_NO_BODY':
      // The two protocol classes word this differently (captures f_soap11/f_soap12_no_body_element).
      return source === 'soap-1.1'
        ? ['Server was unable to read request.', 'Request format is invalid: Missing required soap:Body element.']
        : ['Server was unable to process request.', 'Request format is invalid: Missing required soap:Body element.'];
    case 'SOAP_UNKNOWN_ACTION':
      return [`Server did not recognize the value of HTTP Header SOAPAction: ${error.action}.`];
    case 'SOAP12_NO_VALID_ACTION':
      // Res.UnableToHandleRequestActionRequired0: no action parameter, or an empty one.
      return ['Unable to handle request without a valid action parameter. Please supply a valid soap action.'];
    case 'SOAP12_UNKNOWN_ACTION':
      // Res.UnableToHandleRequestActionNotRecognized1, with the action as decoded.
      return [`Unable to handle request. The action '${error.action}' was not recognized.`];
    case 'SOAP_BAD_PARAMETER':
      return ['Server was unable to read request.', `There is an error in XML document (${error.line}, ${error.column}).`, error.detail];
    case 'SOAP_MUST_UNDERSTAND':
      return [`SOAP header ${error.header} was not understood.`];
    case 'SERVER_TOO_BUSY':
      // Password hashing is at capacity; nothing else is wrong with the request.
      return ['Server too busy'];
    case 'SERVER_ERROR':
      // customErrors On: never the exception's own text, which could carry internals.
      return ['Server was unable to process request.', 'An internal error occurred.'];
  }
}

/** The int-conversion detail message used inside SOAP_BAD_PARAMETER. */
export function intReasonMessage(reason: 'format' | 'overflow'): string {
  return INT_REASON[reason];
}
