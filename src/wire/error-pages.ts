/**
 * HTML error pages for requests that never reach a web service protocol: unknown paths (404),
 * methods IIS refuses before ASMX sees them (405), and pipeline errors ASP.NET answers with its
 * customErrors page (500). Modelled on ASP.NET's "Runtime Error" page with customErrors On: it
 * says nothing about the error, and unlike the captured Mono page carries no version banner.
 */

const STYLE =
  'body {font-family:"Verdana";font-weight:normal;font-size: .7em;color:black;} ' +
  'p {font-family:"Verdana";font-weight:normal;color:black;margin-top: -5px} ' +
  'b {font-family:"Verdana";font-weight:bold;color:black;margin-top: -5px} ' +
  'H1 { font-family:"Verdana";font-weight:normal;font-size:18pt;color:red } ' +
  'H2 { font-family:"Verdana";font-weight:normal;font-size:14pt;color:maroon }';

function page(title: string, heading: string, description: string): string {
  return [
    '<!DOCTYPE html>',
    '<html>',
    '    <head>',
    `        <title>${title}</title>`,
    '        <meta name="viewport" content="width=device-width" />',
    `        <style>${STYLE}</style>`,
    '    </head>',
    '    <body bgcolor="white">',
    `            <span><H1>Server Error in '/' Application.<hr width=100% size=1 color=silver></H1>`,
    `            <h2> <i>${heading}</i> </h2></span>`,
    `            <b> Description: </b>${description}`,
    '            <br><br>',
    '    </body>',
    '</html>',
    '',
  ].join('\r\n');
}

export const RUNTIME_ERROR_PAGE = page(
  'Runtime Error',
  'Runtime Error',
  'An application error occurred on the server. The current custom error settings for this application prevent the details of the application error from being viewed remotely (for security reasons).',
);

export const NOT_FOUND_PAGE = page(
  'The resource cannot be found.',
  'The resource cannot be found.',
  'HTTP 404. The resource you are looking for (or one of its dependencies) could have been removed, had its name changed, or is temporarily unavailable.  Please review the following URL and make sure that it is spelled correctly.',
);

/** IIS's own page for a verb its handler mapping does not allow. */
export const METHOD_NOT_ALLOWED_PAGE = [
  '<!DOCTYPE html>',
  '<html>',
  '<head><title>405 - HTTP verb used to access this page is not allowed.</title></head>',
  '<body><h2>405 - HTTP verb used to access this page is not allowed.</h2>',
  '<h3>The page you are looking for cannot be displayed because an invalid method (HTTP verb) was used to attempt access.</h3>',
  '</body>',
  '</html>',
  '',
].join('\r\n');

/**
 * What http.sys (the kernel listener in front of IIS) answers to requests it cannot even frame:
 * a bad URL, oversized headers, a garbled request line or chunk, a body that never arrives.
 * Written raw to the socket, so it is a whole HTTP/1.1 response.
 */
export function httpSysErrorResponse(status: 400 | 408, detail: string): string {
  const title = status === 400 ? 'Bad Request' : 'Request Timeout';
  const body = [
    '<!DOCTYPE HTML PUBLIC "-//W3C//DTD HTML 4.01//EN""http://www.w3.org/TR/html4/strict.dtd">',
    `<HTML><HEAD><TITLE>${title}</TITLE>`,
    '<META HTTP-EQUIV="Content-Type" Content="text/html; charset=us-ascii"></HEAD>',
    `<BODY><h2>${title}</h2>`,
    `<hr><p>HTTP Error ${status}. ${detail}</p>`,
    '</BODY></HTML>',
    '',
  ].join('\r\n');
  return `HTTP/1.1 ${status} ${title}\r\nContent-Type: text/html; charset=us-ascii\r\nX-Content-Type-Options: nosniff\r\nConnection: close\r\nContent-Length: ${Buffer.byteLength(body)}\r\n\r\n${body}`;
}

/** The body of http.sys's "Bad Request - Invalid URL" page, for URLs with undecodable escapes. */
export const INVALID_URL_PAGE = [
  '<!DOCTYPE HTML PUBLIC "-//W3C//DTD HTML 4.01//EN""http://www.w3.org/TR/html4/strict.dtd">',
  '<HTML><HEAD><TITLE>Bad Request</TITLE>',
  '<META HTTP-EQUIV="Content-Type" Content="text/html; charset=us-ascii"></HEAD>',
  '<BODY><h2>Bad Request - Invalid URL</h2>',
  '<hr><p>HTTP Error 400. The request URL is invalid.</p>',
  '</BODY></HTML>',
  '',
].join('\r\n');

/**
 * http.sys's page when the application behind it is not available (IIS with its application
 * pool stopped): front mode's answer when the old service cannot be reached (docs/cutover.md).
 */
export const SERVICE_UNAVAILABLE_PAGE = [
  '<!DOCTYPE HTML PUBLIC "-//W3C//DTD HTML 4.01//EN""http://www.w3.org/TR/html4/strict.dtd">',
  '<HTML><HEAD><TITLE>Service Unavailable</TITLE>',
  '<META HTTP-EQUIV="Content-Type" Content="text/html; charset=us-ascii"></HEAD>',
  '<BODY><h2>Service Unavailable</h2>',
  '<hr><p>HTTP Error 503. The service is unavailable.</p>',
  '</BODY></HTML>',
  '',
].join('\r\n');
