/**
 * `GET /Authentication.asmx?wsdl` (any case of `wsdl`): the service description, generated from
 * the contract in src/contract/operations.ts the way ASMX's ServiceDescriptionReflector builds it
 * from the `[WebMethod]`s, and written the way ServiceDescription.Write lays it out.
 *
 * The document is rendered once, at start-up, into a template whose only hole is the service
 * address (the `location` of the four ports, which ASMX takes from the request's Host). A request
 * then costs one escape and one join.
 */
import {
  OPERATIONS,
  SERVICE_NAME,
  SERVICE_NAMESPACE,
  type OperationSpec,
  type ParamType,
  type ResultType,
} from '../contract/operations.js';
import { offersHttpGet, type HttpGetOption } from './http-get-option.js';
import { escapeXmlAttr } from './xml-text.js';

export interface WsdlOptions {
  /**
   * Whether the HttpGet protocol is enabled (web.config `<protocols><remove name="HttpGet"/>`
   * turns it off). When off, ASMX leaves out the HttpGet messages, port type, binding and port;
   * everything else is unchanged. A list of operation names offers only those over GET (our
   * extension). Default: on, as in the captures.
   */
  readonly httpGet?: HttpGetOption;
}

const NS = {
  soap: 'http://schemas.xmlsoap.org/wsdl/soap/',
  tm: 'http://microsoft.com/wsdl/mime/textMatching/',
  soapenc: 'http://schemas.xmlsoap.org/soap/encoding/',
  mime: 'http://schemas.xmlsoap.org/wsdl/mime/',
  s: 'http://www.w3.org/2001/XMLSchema',
  soap12: 'http://schemas.xmlsoap.org/wsdl/soap12/',
  http: 'http://schemas.xmlsoap.org/wsdl/http/',
  wsdl: 'http://schemas.xmlsoap.org/wsdl/',
  diffgram: 'urn:schemas-microsoft-com:xml-diffgram-v1',
  soapHttpTransport: 'http://schemas.xmlsoap.org/soap/http',
} as const;

/** A tiny element tree: enough for WSDL and disco, which have no mixed content. */
export interface XmlNode {
  readonly name: string;
  readonly attrs: readonly (readonly [string, string])[];
  readonly children: readonly XmlNode[];
}

function el(name: string, attrs: readonly (readonly [string, string])[] = [], children: readonly XmlNode[] = []): XmlNode {
  return { name, attrs, children };
}

/**
 * Stands for the service URL while the document is rendered; it contains nothing XML escaping
 * touches (private-use characters), so it survives rendering verbatim and marks where to splice.
 */
const URL_SLOT = '\uE000service-url\uE001';

/**
 * Serialises like .NET's XmlTextWriter with Formatting.Indented and Indentation 2: one element
 * per line, empty elements as `<name />` (with the space), attributes in insertion order with
 * double quotes, CRLF newlines (ServiceDescription writes Environment.NewLine on .NET; the Mono
 * captures show LF), no newline after the root's end tag.
 */
export function renderIndentedXml(root: XmlNode): string {
  const lines: string[] = ['<?xml version="1.0" encoding="utf-8"?>'];
  const walk = (node: XmlNode, depth: number): void => {
    const indent = '  '.repeat(depth);
    let start = `${indent}<${node.name}`;
    for (const [name, value] of node.attrs) start += ` ${name}="${escapeXmlAttr(value)}"`;
    if (node.children.length === 0) {
      lines.push(`${start} />`);
      return;
    }
    lines.push(`${start}>`);
    for (const child of node.children) walk(child, depth + 1);
    lines.push(`${indent}</${node.name}>`);
  };
  walk(root, 0);
  return lines.join('\r\n');
}

/**
 * Turns a rendered document containing URL_SLOT into a function of the URL. Splitting once keeps
 * the per-request work to an escape and a join.
 */
export function compileUrlTemplate(rendered: string): (serviceUrl: string) => string {
  const parts = rendered.split(URL_SLOT);
  return (serviceUrl: string): string => parts.join(escapeXmlAttr(serviceUrl));
}

/** Used by disco.ts, which splices the same URL (and `URL?wsdl`) into its own template. */
export const SERVICE_URL_SLOT = URL_SLOT;

// --- Schema (wsdl:types) -------------------------------------------------------------------------

/**
 * XmlSchemaExporter output for a parameter: reference-type `string` may be absent (minOccurs 0),
 * value-type `int` must be present (minOccurs 1).
 */
function paramElement(name: string, type: ParamType): XmlNode {
  const minOccurs = type === 'int' ? '1' : '0';
  return el('s:element', [['minOccurs', minOccurs], ['maxOccurs', '1'], ['name', name], ['type', `s:${type}`]]);
}

/**
 * The `System.Data.DataTable` schema that DataTable.GetDataTableSchema provides through
 * `[XmlSchemaProvider]`: any XSD content (the inline schema) then one diffgram element.
 */
function dataTableComplexType(): XmlNode {
  return el('s:complexType', [], [
    el('s:sequence', [], [
      el('s:any', [['minOccurs', '0'], ['maxOccurs', 'unbounded'], ['namespace', NS.s], ['processContents', 'lax']]),
      el('s:any', [['minOccurs', '1'], ['namespace', NS.diffgram], ['processContents', 'lax']]),
    ]),
  ]);
}

function resultElement(op: OperationSpec): XmlNode {
  const name = `${op.name}Result`;
  switch (op.result) {
    case 'string':
      return el('s:element', [['minOccurs', '0'], ['maxOccurs', '1'], ['name', name], ['type', 's:string']]);
    case 'boolean':
      return el('s:element', [['minOccurs', '1'], ['maxOccurs', '1'], ['name', name], ['type', 's:boolean']]);
    case 'DataTable':
      return el('s:element', [['minOccurs', '0'], ['maxOccurs', '1'], ['name', name]], [dataTableComplexType()]);
  }
}

/** The literal request wrapper element; a parameterless method gets an empty `<s:complexType />`. */
function requestElement(op: OperationSpec): XmlNode {
  const content = op.params.length === 0 ? [] : [el('s:sequence', [], op.params.map((p) => paramElement(p.name, p.type)))];
  return el('s:element', [['name', op.name]], [el('s:complexType', [], content)]);
}

function responseElement(op: OperationSpec): XmlNode {
  return el('s:element', [['name', `${op.name}Response`]], [el('s:complexType', [], [el('s:sequence', [], [resultElement(op)])])]);
}

/**
 * Root elements the HTTP GET/POST bindings return (`<string xmlns="SVCAPI">`...): exported by the
 * HttpGet/HttpPost reflectors after the SOAP ones, in the order the methods first use them.
 */
function httpReturnElement(result: ResultType): XmlNode {
  switch (result) {
    case 'string':
      return el('s:element', [['name', 'string'], ['nillable', 'true'], ['type', 's:string']]);
    case 'boolean':
      return el('s:element', [['name', 'boolean'], ['type', 's:boolean']]);
    case 'DataTable':
      return el('s:element', [['name', 'DataTable'], ['nillable', 'true']], [dataTableComplexType()]);
  }
}

// --- Messages, port types, bindings, service ----------------------------------------------------

type HttpProtocol = 'HttpGet' | 'HttpPost';

function soapMessages(op: OperationSpec): XmlNode[] {
  return [
    el('wsdl:message', [['name', `${op.name}SoapIn`]], [el('wsdl:part', [['name', 'parameters'], ['element', `tns:${op.name}`]])]),
    el('wsdl:message', [['name', `${op.name}SoapOut`]], [el('wsdl:part', [['name', 'parameters'], ['element', `tns:${op.name}Response`]])]),
  ];
}

/** HTTP GET/POST parameters are all `s:string` on the wire, ints included (parsed server-side). */
function httpMessages(op: OperationSpec, protocol: HttpProtocol): XmlNode[] {
  return [
    el('wsdl:message', [['name', `${op.name}${protocol}In`]], op.params.map((p) => el('wsdl:part', [['name', p.name], ['type', 's:string']]))),
    el('wsdl:message', [['name', `${op.name}${protocol}Out`]], [el('wsdl:part', [['name', 'Body'], ['element', `tns:${op.result}`]])]),
  ];
}

function portType(operations: readonly OperationSpec[], suffix: 'Soap' | HttpProtocol): XmlNode {
  const msg = suffix === 'Soap' ? ['SoapIn', 'SoapOut'] : [`${suffix}In`, `${suffix}Out`];
  return el('wsdl:portType', [['name', `${SERVICE_NAME}${suffix}`]], operations.map((op) =>
    el('wsdl:operation', [['name', op.name]], [
      el('wsdl:input', [['message', `tns:${op.name}${msg[0]}`]]),
      el('wsdl:output', [['message', `tns:${op.name}${msg[1]}`]]),
    ]),
  ));
}

/** SOAP 1.1 and 1.2 bindings differ only in the extension prefix; both share the Soap port type. */
function soapBinding(operations: readonly OperationSpec[], prefix: 'soap' | 'soap12'): XmlNode {
  const name = prefix === 'soap' ? `${SERVICE_NAME}Soap` : `${SERVICE_NAME}Soap12`;
  return el('wsdl:binding', [['name', name], ['type', `tns:${SERVICE_NAME}Soap`]], [
    el(`${prefix}:binding`, [['transport', NS.soapHttpTransport]]),
    ...operations.map((op) =>
      el('wsdl:operation', [['name', op.name]], [
        // SOAPAction = namespace + "/" + method name, since the namespace has no trailing slash.
        el(`${prefix}:operation`, [['soapAction', `${SERVICE_NAMESPACE}/${op.name}`], ['style', 'document']]),
        el('wsdl:input', [], [el(`${prefix}:body`, [['use', 'literal']])]),
        el('wsdl:output', [], [el(`${prefix}:body`, [['use', 'literal']])]),
      ]),
    ),
  ]);
}

function httpBinding(operations: readonly OperationSpec[], protocol: HttpProtocol): XmlNode {
  const input = protocol === 'HttpGet'
    ? el('http:urlEncoded')
    : el('mime:content', [['type', 'application/x-www-form-urlencoded']]);
  return el('wsdl:binding', [['name', `${SERVICE_NAME}${protocol}`], ['type', `tns:${SERVICE_NAME}${protocol}`]], [
    el('http:binding', [['verb', protocol === 'HttpGet' ? 'GET' : 'POST']]),
    ...operations.map((op) =>
      el('wsdl:operation', [['name', op.name]], [
        el('http:operation', [['location', `/${op.name}`]]),
        el('wsdl:input', [], [input]),
        el('wsdl:output', [], [el('mime:mimeXml', [['part', 'Body']])]),
      ]),
    ),
  ]);
}

function port(binding: string, addressElement: string): XmlNode {
  return el('wsdl:port', [['name', binding], ['binding', `tns:${binding}`]], [el(addressElement, [['location', URL_SLOT]])]);
}

/** Builds the whole wsdl:definitions tree, with URL_SLOT where the service URL goes. */
export function buildWsdlTree(operations: readonly OperationSpec[], options: WsdlOptions = {}): XmlNode {
  // Operations offered over HttpGet (all, none, or a list); the HttpGet binding is left out
  // entirely when it offers none, as .NET does when the protocol is removed in web.config.
  const getOperations = operations.filter((op) => offersHttpGet(options.httpGet, op.name));
  const httpProtocols: HttpProtocol[] = getOperations.length === 0 ? ['HttpPost'] : ['HttpGet', 'HttpPost'];
  const over = (protocol: HttpProtocol): readonly OperationSpec[] => (protocol === 'HttpGet' ? getOperations : operations);
  const httpResults = [...new Set(operations.map((op) => op.result))];

  const types = el('wsdl:types', [], [
    el('s:schema', [['elementFormDefault', 'qualified'], ['targetNamespace', SERVICE_NAMESPACE]], [
      ...operations.flatMap((op) => [requestElement(op), responseElement(op)]),
      ...httpResults.map(httpReturnElement),
    ]),
  ]);

  const messages = [
    ...operations.flatMap(soapMessages),
    ...httpProtocols.flatMap((protocol) => over(protocol).flatMap((op) => httpMessages(op, protocol))),
  ];

  const portTypes = [portType(operations, 'Soap'), ...httpProtocols.map((protocol) => portType(over(protocol), protocol))];

  const bindings = [
    soapBinding(operations, 'soap'),
    soapBinding(operations, 'soap12'),
    ...httpProtocols.map((protocol) => httpBinding(over(protocol), protocol)),
  ];

  const service = el('wsdl:service', [['name', SERVICE_NAME]], [
    port(`${SERVICE_NAME}Soap`, 'soap:address'),
    port(`${SERVICE_NAME}Soap12`, 'soap12:address'),
    ...httpProtocols.map((protocol) => port(`${SERVICE_NAME}${protocol}`, 'http:address')),
  ]);

  // Declaration order as .NET's ServiceDescription writes it (its namespace table order); Mono's
  // differs, which is the one place the captured document is not .NET's.
  const definitionsAttrs: [string, string][] = [
    ['xmlns:soap', NS.soap],
    ['xmlns:tm', NS.tm],
    ['xmlns:soapenc', NS.soapenc],
    ['xmlns:mime', NS.mime],
    ['xmlns:tns', SERVICE_NAMESPACE],
    ['xmlns:s', NS.s],
    ['xmlns:soap12', NS.soap12],
    ['xmlns:http', NS.http],
    ['targetNamespace', SERVICE_NAMESPACE],
    ['xmlns:wsdl', NS.wsdl],
  ];

  return el('wsdl:definitions', definitionsAttrs, [types, ...messages, ...portTypes, ...bindings, service]);
}

/**
 * Compiles the WSDL for `operations` once; the returned function gives the document for a
 * service URL such as `http://host:port/Authentication.asmx` (scheme and Host of the request).
 */
export function compileWsdl(
  operations: readonly OperationSpec[] = OPERATIONS,
  options: WsdlOptions = {},
): (serviceUrl: string) => string {
  return compileUrlTemplate(renderIndentedXml(buildWsdlTree(operations, options)));
}
