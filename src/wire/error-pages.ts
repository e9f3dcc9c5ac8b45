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
