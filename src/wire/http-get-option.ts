/**
 * HTTP GET puts passwords in URLs, so operators may turn the HttpGet binding off, for the whole
 * service or per operation. One option shape serves the WSDL, the help page and the
 * dispatcher, so what is documented and what is served cannot disagree.
 *
 * `true` (default): every operation over GET; `false`: none; a list: only those operations.
 */
export type HttpGetOption = boolean | readonly string[];

export function offersHttpGet(option: HttpGetOption | undefined, operation: string): boolean {
  if (option === undefined || option === true) return true;
  if (option === false) return false;
  return option.includes(operation);
}
