/**
 * `GET /Authentication.asmx?disco`: the DISCO document ASMX's DiscoveryServerType writes. It
 * points at the WSDL (`contractRef`), the help page (`docRef`) and lists the two SOAP bindings;
 * the HTTP GET/POST bindings are never listed. Rendered once; only the URL is spliced per request.
 */
import { SERVICE_NAME, SERVICE_NAMESPACE } from '../contract/operations.js';
import { SERVICE_URL_SLOT, compileUrlTemplate, renderIndentedXml, type XmlNode } from './wsdl.js';

const DISCO_NS = 'http://schemas.xmlsoap.org/disco/';
const SCL_NS = 'http://schemas.xmlsoap.org/disco/scl/';
const SOAP_NS = 'http://schemas.xmlsoap.org/disco/soap/';

/**
 * A `<soap>` entry. XmlSerializer writes the binding QName with a fresh prefix per element
 * (`q1`, `q2`, ...) declared just before the attribute that uses it, and the element's own
 * default namespace last.
 */
function soapEntry(binding: string, prefixNumber: number): XmlNode {
  const prefix = `q${prefixNumber}`;
  return {
    name: 'soap',
    attrs: [
      ['address', SERVICE_URL_SLOT],
      [`xmlns:${prefix}`, SERVICE_NAMESPACE],
      ['binding', `${prefix}:${binding}`],
      ['xmlns', SOAP_NS],
    ],
    children: [],
  };
}

/** Compiles the disco document; the returned function gives it for a service URL. */
export function compileDisco(): (serviceUrl: string) => string {
  const root: XmlNode = {
    name: 'discovery',
    attrs: [
      ['xmlns:xsd', 'http://www.w3.org/2001/XMLSchema'],
      ['xmlns:xsi', 'http://www.w3.org/2001/XMLSchema-instance'],
      ['xmlns', DISCO_NS],
    ],
    children: [
      {
        name: 'contractRef',
        // `?wsdl` in lower case, as ASMX writes it (the WSDL itself answers to any case).
        attrs: [['ref', `${SERVICE_URL_SLOT}?wsdl`], ['docRef', SERVICE_URL_SLOT], ['xmlns', SCL_NS]],
        children: [],
      },
      soapEntry(`${SERVICE_NAME}Soap`, 1),
      soapEntry(`${SERVICE_NAME}Soap12`, 2),
    ],
  };
  // Indented like the WSDL, CRLF on .NET (the Mono capture shows LF).
  return compileUrlTemplate(renderIndentedXml(root));
}
