#!/usr/bin/env node
/**
 * The comparison point of the benchmark: node-soap (npm `soap`, a devDependency) serving our own
 * WSDL (fetched from svcapi-auth's ?WSDL) with the same operations, all in memory: tokens and
 * tickets in a Map, news rows in an array, the user's argon2id hash in a variable. node-soap
 * serves SOAP 1.1 only (it has no HTTP GET/POST bindings, and its server does not speak the
 * SOAP 1.2 binding of this WSDL), so the benchmark compares it on SOAP 1.1.
 *
 * Usage: node bench/node-soap-server.mjs <fixture.json> [--port 0] [--host 127.0.0.1]
 *   fixture: { wsdlFile, login, passwordHash, appId, loginUrl, tokens: [...], news: [{ NewsID, AppID,
 *              Title, Body, Language, Url, PublishedAt }] } (news newest first)
 * Prints `Service: http://HOST:PORT/Authentication.asmx` once listening.
 */
import { randomUUID } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { createServer } from 'node:http';
import process from 'node:process';
import argon2 from 'argon2';
import soap from 'soap';
import { argValue } from './lib/args.mjs';

const fixture = JSON.parse(readFileSync(process.argv[2], 'utf8'));
const host = argValue('--host', '127.0.0.1');
const port = Number(argValue('--port', '0'));
const wsdl = readFileSync(fixture.wsdlFile, 'utf8');

const TICKET_TTL_MS = 120_000;
const SWEEP_FIRST_AT = 200_000;
let sweepAt = SWEEP_FIRST_AT;
/** token -> { kind: 'session' | 'ticket', expiresAt, used } */
const tokens = new Map(fixture.tokens.map((t) => [t, { kind: 'session', expiresAt: Date.now() + 86_400_000, used: false }]));

const canonical = (t) => (typeof t === 'string' ? t.trim().toLowerCase() : '');

function validate(token) {
  const key = canonical(token);
  const entry = tokens.get(key);
  if (entry === undefined || entry.expiresAt <= Date.now()) return false;
  if (entry.kind === 'ticket') {
    if (entry.used) return false;
    entry.used = true;
  }
  return true;
}

const xmlEscape = (s) => String(s).replace(/&/g, '&amp;').replace(/</g, '&lt;').replace(/>/g, '&gt;');
const SCHEMA =
  '<xs:schema id="NewDataSet" xmlns="" xmlns:xs="http://www.w3.org/2001/XMLSchema" xmlns:msdata="urn:schemas-microsoft-com:xml-msdata">' +
  '<xs:element name="NewDataSet" msdata:IsDataSet="true" msdata:MainDataTable="News" msdata:UseCurrentLocale="true"><xs:complexType>' +
  '<xs:choice minOccurs="0" maxOccurs="unbounded"><xs:element name="News"><xs:complexType><xs:sequence>' +
  '<xs:element name="NewsID" type="xs:int" minOccurs="0" /><xs:element name="AppID" type="xs:int" minOccurs="0" />' +
  '<xs:element name="Title" type="xs:string" minOccurs="0" /><xs:element name="Body" type="xs:string" minOccurs="0" />' +
  '<xs:element name="Language" type="xs:string" minOccurs="0" /><xs:element name="Url" type="xs:string" minOccurs="0" />' +
  '<xs:element name="PublishedAt" type="xs:dateTime" minOccurs="0" /></xs:sequence></xs:complexType></xs:element>' +
  '</xs:choice></xs:complexType></xs:element></xs:schema>';

/** The same DataTable (inline schema + diffgram) svcapi-auth writes, built per call from the rows. */
function dataTable(rows) {
  const body = rows.map((r, i) =>
    `<News diffgr:id="News${i + 1}" msdata:rowOrder="${i}"><NewsID>${r.NewsID}</NewsID><AppID>${r.AppID}</AppID>` +
    `<Title>${xmlEscape(r.Title)}</Title><Body>${xmlEscape(r.Body)}</Body><Language>${xmlEscape(r.Language)}</Language>` +
    `${r.Url === null ? '<Url />' : `<Url>${xmlEscape(r.Url)}</Url>`}<PublishedAt>${r.PublishedAt}</PublishedAt></News>`).join('');
  return `${SCHEMA}<diffgr:diffgram xmlns:msdata="urn:schemas-microsoft-com:xml-msdata" xmlns:diffgr="urn:schemas-microsoft-com:xml-diffgram-v1">` +
    `${rows.length === 0 ? '' : `<DocumentElement xmlns="">${body}</DocumentElement>`}</diffgr:diffgram>`;
}

function whatsNew(args) {
  const appId = Number(args.AppID);
  const qty = Math.min(100, Number(args.qtyNews) || 0);
  const language = canonical(args.Language);
  const ofApp = fixture.news.filter((n) => n.AppID === appId);
  const candidates = [language, language.split('-')[0], 'en'].filter((l) => l !== '');
  let rows = [];
  for (const lang of candidates) {
    rows = ofApp.filter((n) => n.Language.toLowerCase() === lang);
    if (rows.length > 0) break;
  }
  return { WhatsNewResult: { $xml: dataTable(qty <= 0 ? [] : rows.slice(0, qty)) } };
}

async function validateUser(args) {
  const ok = canonical(args.login) === canonical(fixture.login) && Number(args.AppId) === fixture.appId &&
    await argon2.verify(fixture.passwordHash, String(args.password ?? ''));
  if (!ok) return { ValidateUserResult: '' };
  const token = randomUUID();
  tokens.set(token, { kind: 'session', expiresAt: Date.now() + 86_400_000, used: false });
  return { ValidateUserResult: token };
}

function getUserLoginUrl(args) {
  if (!validate(args.token) || Number(args.AppID) !== fixture.appId) return { GetUserLoginURLResult: '' };
  const ticket = randomUUID();
  tokens.set(ticket, { kind: 'ticket', expiresAt: Date.now() + TICKET_TTL_MS, used: false });
  // Used and expired tickets swept when the map has doubled since the last sweep: a sweep at
  // every call once past a fixed size, with every ticket still live (120 s of tickets at 9,000/s
  // is a million), scanned the whole map per ticket and took this server to 223-678 req/s in a
  // long bench/cpu-compare.mjs run (2026-11-29).
  if (tokens.size > sweepAt) {
    const now = Date.now();
    for (const [k, v] of tokens) if (v.kind === 'ticket' && (v.used || v.expiresAt <= now)) tokens.delete(k);
    sweepAt = Math.max(SWEEP_FIRST_AT, 2 * tokens.size);
  }
  return { GetUserLoginURLResult: `${fixture.loginUrl}${fixture.loginUrl.includes('?') ? '&' : '?'}ticket=${ticket}` };
}

const operations = {
  ValidateUser: validateUser,
  ValidateUserToken: (args) => ({ ValidateUserTokenResult: validate(args.token) }),
  WhatsNew: whatsNew,
  ValidateUserJSON: () => ({ ValidateUserJSONResult: JSON.stringify({ success: false }) }),
  ValidateUserTokenJSON: () => ({ ValidateUserTokenJSONResult: JSON.stringify({ valid: false }) }),
  GetUserLoginURL: getUserLoginUrl,
};
const services = { Authentication: { AuthenticationSoap: operations, AuthenticationSoap12: operations } };

const server = createServer((req, res) => {
  res.statusCode = 404;
  res.end();
});
server.keepAliveTimeout = 72_000;
server.listen(port, host, () => {
  soap.listen(server, { path: '/Authentication.asmx', services, xml: wsdl, enableChunkedEncoding: false, suppressStack: true });
  process.stdout.write(`Service: http://${host}:${server.address().port}/Authentication.asmx\n`);
});
const stop = () => server.close(() => process.exit(0));
process.once('SIGTERM', stop);
process.once('SIGINT', stop);
