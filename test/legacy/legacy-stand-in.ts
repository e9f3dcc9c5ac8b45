/**
 * A stand-in for the old Authentication.asmx's token operations (token passthrough tests): a
 * node:http(s) server answering SOAP 1.1 ValidateUserToken and GetUserLoginURL for the tokens
 * it issued (upper-case GUIDs, its own form), and misbehaving on request: refusing, hanging,
 * answering huge, dripping, garbage, or `true` for everything.
 *
 * With a token layout (`json`, a compatibility profile's json.validateUserToken) it also answers
 * ValidateUserTokenJSON (token adoption tests), reading the token where the layout's inputs say:
 * over SOAP 1.1 (query, header, cookie, bearer) or the HTTP POST binding (form), in that layout
 * with the owner and expiry the token was issued with; `jsonAnswer` replaces that answer (a
 * hostile old service), or hangs.
 */
import { randomUUID } from 'node:crypto';
import { EventEmitter, once } from 'node:events';
import { createServer as createHttpServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import { createServer as createHttpsServer } from 'node:https';
import type { Socket } from 'node:net';
import type { JsonOperationProfile } from '../../src/contract/compat-profile.js';
import { compileJsonResult } from '../../src/wire/json-result.js';

export type StandInMode = 'normal' | 'hang' | 'huge' | 'drip' | 'garbage' | 'fault' | 'yes' | 'redirect';

/** Whose a token is and until when, as the old ValidateUserTokenJSON tells it. */
export interface StandInOwner {
  readonly login: string;
  readonly appId: number;
  readonly expiresAt: Date;
}

export interface LegacyStandIn {
  readonly url: string;
  /** Tokens the old service considers valid. */
  readonly tokens: Set<string>;
  /** The owners of the tokens issued with one. */
  readonly owners: Map<string, StandInOwner>;
  /** Every ValidateUserTokenJSON call: the token it read, and where from. */
  readonly jsonAsked: Array<{ token: string | null; binding: 'soap11' | 'http-post' }>;
  /** ValidateUserTokenJSON's answer text instead of the layout's, or 'hang' (no answer). */
  jsonAnswer: ((token: string, usual: string) => string | 'hang') | null;
  mode: StandInMode;
  /** Every token asked about, in order (ValidateUserToken and GetUserLoginURL). */
  readonly asked: string[];
  /** Requests being answered now, and the most at once. */
  inFlight: number;
  maxInFlight: number;
  /** Bytes written in 'huge' and 'drip' answers before the client hung up. */
  bytesWritten: number;
  /** 'request' (token) once a request's body has arrived; 'hangup' when a 'huge' or 'drip' answer's client went away. */
  readonly events: EventEmitter;
  /** A new token the old service issued (to this owner, for ValidateUserTokenJSON). */
  issue(owner?: StandInOwner): string;
  close(): Promise<void>;
}

/** Resolves once `count` more requests have reached the stand-in (their bodies read). */
export function requestsArriving(standIn: LegacyStandIn, count: number): Promise<void> {
  return new Promise((resolve) => {
    let seen = 0;
    const onRequest = (): void => {
      if (++seen < count) return;
      standIn.events.off('request', onRequest);
      resolve();
    };
    standIn.events.on('request', onRequest);
  });
}

/** Resolves when the client of a 'huge' or 'drip' answer hangs up. */
export async function hangup(standIn: LegacyStandIn): Promise<void> {
  await once(standIn.events, 'hangup');
}

const envelope = (inner: string): string => '<?xml version="1.0" encoding="utf-8"?><soap:Envelope xmlns:soap="http://schemas.xmlsoap.org/soap/envelope/" xmlns:xsi="http://www.w3.org/2001/XMLSchema-instance" xmlns:xsd="http://www.w3.org/2001/XMLSchema">'
  + `<soap:Body>${inner}</soap:Body></soap:Envelope>`;

export async function startLegacyStandIn(options: { tls?: { cert: Buffer; key: Buffer }; json?: JsonOperationProfile } = {}): Promise<LegacyStandIn> {
  const sockets = new Set<Socket>();
  const timers = new Set<NodeJS.Timeout>();
  const layout = options.json;
  const encoder = layout === undefined ? null : compileJsonResult(layout);
  const standIn: LegacyStandIn = {
    url: '',
    tokens: new Set(),
    owners: new Map(),
    jsonAsked: [],
    jsonAnswer: null,
    mode: 'normal',
    asked: [],
    inFlight: 0,
    maxInFlight: 0,
    bytesWritten: 0,
    events: new EventEmitter(),
    issue(owner) {
      const token = randomUUID().toUpperCase();
      standIn.tokens.add(token);
      if (owner !== undefined) standIn.owners.set(token, owner);
      return token;
    },
    close: async () => undefined,
  };

  /** The token ValidateUserTokenJSON reads, from the layout's sources in order. */
  function jsonToken(req: IncomingMessage, body: string, binding: 'soap11' | 'http-post'): string | null {
    if (layout === undefined) return null;
    const name = layout.inputs.names.token ?? 'token';
    const query = new URL(req.url ?? '/', 'http://x').searchParams;
    for (const source of layout.inputs.sources) {
      let value: string | null | undefined;
      if (source === 'query') value = query.get(name);
      else if (source === 'form' && binding === 'http-post') value = new URLSearchParams(body).get(name);
      else if (source === 'header') value = req.headers[name.toLowerCase()] as string | undefined;
      else if (source === 'cookie') value = (req.headers.cookie ?? '').split(';').map((part) => part.trim().split('=')).find(([k]) => k === name)?.[1];
      else if (source === 'bearer') value = /^Bearer (\S+)$/.exec(req.headers.authorization ?? '')?.[1];
      if (value !== null && value !== undefined) return value;
    }
    return null;
  }

  /** ValidateUserTokenJSON as the layout writes it; undefined when the answer is to hang. */
  function jsonResult(req: IncomingMessage, body: string, binding: 'soap11' | 'http-post'): string | undefined {
    const token = jsonToken(req, body, binding);
    standIn.jsonAsked.push({ token, binding });
    if (encoder === null) return '';
    const owner = token === null ? undefined : standIn.owners.get(token);
    const valid = token !== null && (standIn.mode === 'yes' || standIn.tokens.has(token));
    const usual = valid && owner !== undefined ? encoder.success({ token: null, login: owner.login, appId: owner.appId, expiresAt: owner.expiresAt }) : encoder.failure;
    const text = token === null || standIn.jsonAnswer === null ? usual : standIn.jsonAnswer(token, usual);
    return text === 'hang' ? undefined : text;
  }

  const xml = (text: string): string => text.replace(/&/g, '&amp;').replace(/</g, '&lt;').replace(/>/g, '&gt;');

  function answer(req: IncomingMessage, res: ServerResponse, body: string): void {
    const action = String(req.headers.soapaction ?? '').replace(/"/g, '');
    const httpPostJson = (req.url ?? '').split('?')[0]?.endsWith('/ValidateUserTokenJSON') === true;
    if (action === 'SVCAPI/ValidateUserTokenJSON' || httpPostJson) {
      const result = jsonResult(req, body, httpPostJson ? 'http-post' : 'soap11');
      if (result === undefined) {
        // Hung: the client's timeout ends it.
        res.on('close', () => (standIn.inFlight -= 1));
        return;
      }
      res.on('close', () => (standIn.inFlight -= 1));
      res.writeHead(200, { 'content-type': 'text/xml; charset=utf-8' });
      res.end(httpPostJson
        ? `<?xml version="1.0" encoding="utf-8"?>\r\n<string xmlns="SVCAPI">${xml(result)}</string>`
        : envelope(`<ValidateUserTokenJSONResponse xmlns="SVCAPI"><ValidateUserTokenJSONResult>${xml(result)}</ValidateUserTokenJSONResult></ValidateUserTokenJSONResponse>`));
      return;
    }
    const token = /<token>([^<]*)<\/token>/.exec(body)?.[1] ?? '';
    const appId = /<AppID>([^<]*)<\/AppID>/.exec(body)?.[1] ?? '';
    standIn.asked.push(token);
    standIn.events.emit('request', token);
    const done = (): void => {
      standIn.inFlight -= 1;
    };
    const mode = standIn.mode;
    if (mode === 'hang') {
      res.on('close', done);
      return; // never answers
    }
    if (mode === 'huge' || mode === 'drip') {
      res.writeHead(200, { 'content-type': 'text/xml; charset=utf-8' });
      res.write('<?xml version="1.0" encoding="utf-8"?><soap:Envelope xmlns:soap="http://schemas.xmlsoap.org/soap/envelope/"><soap:Body><ValidateUserTokenResponse xmlns="SVCAPI"><ValidateUserTokenResult>true');
      const chunk = mode === 'huge' ? ' '.repeat(64 * 1024) : ' ';
      const timer = setInterval(() => {
        if (res.destroyed || res.writableEnded) return;
        standIn.bytesWritten += chunk.length;
        res.write(chunk);
        if (standIn.bytesWritten > 64 * 1024 * 1024) res.end();
      }, mode === 'huge' ? 1 : 100);
      timers.add(timer);
      res.on('close', () => {
        clearInterval(timer);
        done();
        standIn.events.emit('hangup');
      });
      return;
    }
    res.on('close', done);
    if (mode === 'garbage') {
      res.writeHead(200, { 'content-type': 'text/xml' });
      res.end('<html><body>true</body></html>');
      return;
    }
    if (mode === 'fault') {
      res.writeHead(500, { 'content-type': 'text/xml; charset=utf-8' });
      res.end(envelope('<soap:Fault><faultcode>soap:Server</faultcode><faultstring>Server was unable to process request.</faultstring></soap:Fault>'));
      return;
    }
    if (mode === 'redirect') {
      res.writeHead(302, { location: 'http://127.0.0.1:1/elsewhere' });
      res.end();
      return;
    }
    const valid = mode === 'yes' || standIn.tokens.has(token);
    res.writeHead(200, { 'content-type': 'text/xml; charset=utf-8' });
    if (action === 'SVCAPI/ValidateUserToken') {
      res.end(envelope(`<ValidateUserTokenResponse xmlns="SVCAPI"><ValidateUserTokenResult>${valid}</ValidateUserTokenResult></ValidateUserTokenResponse>`));
    } else if (action === 'SVCAPI/GetUserLoginURL') {
      const url = valid ? `https://old.example/Login.aspx?app=${appId}&amp;ticket=T-${token.slice(0, 8)}` : '';
      res.end(envelope(`<GetUserLoginURLResponse xmlns="SVCAPI"><GetUserLoginURLResult>${url}</GetUserLoginURLResult></GetUserLoginURLResponse>`));
    } else {
      res.end(envelope('<OtherResponse xmlns="SVCAPI" />'));
    }
  }

  const handler = (req: IncomingMessage, res: ServerResponse): void => {
    standIn.inFlight += 1;
    standIn.maxInFlight = Math.max(standIn.maxInFlight, standIn.inFlight);
    let body = '';
    req.setEncoding('utf8');
    req.on('data', (c: string) => (body += c));
    req.on('end', () => answer(req, res, body));
  };
  const server: Server = options.tls === undefined ? createHttpServer(handler) : createHttpsServer(options.tls, handler);
  server.on('connection', (socket: Socket) => {
    sockets.add(socket);
    socket.on('close', () => sockets.delete(socket));
  });
  // TLS sockets are tracked on secureConnection's underlying connection too.
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const port = (server.address() as { port: number }).port;
  Object.assign(standIn, {
    url: `${options.tls === undefined ? 'http' : 'https'}://${options.tls === undefined ? '127.0.0.1' : 'localhost'}:${port}/Authentication.asmx`,
    close: async () => {
      for (const t of timers) clearInterval(t);
      for (const s of sockets) s.destroy();
      await new Promise<void>((resolve) => server.close(() => resolve()));
    },
  });
  return standIn;
}

/** A URL on which nothing listens (a refused connection). */
export async function refusedUrl(): Promise<string> {
  const probe = createHttpServer();
  await new Promise<void>((resolve) => probe.listen(0, '127.0.0.1', resolve));
  const port = (probe.address() as { port: number }).port;
  await new Promise<void>((resolve) => probe.close(() => resolve()));
  return `http://127.0.0.1:${port}/Authentication.asmx`;
}
