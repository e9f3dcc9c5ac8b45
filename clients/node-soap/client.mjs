#!/usr/bin/env node
/**
 * node-soap (npm `soap`) client for the compatibility suite: SOAP 1.1 and SOAP 1.2 ports of our WSDL.
 * Usage: node clients/node-soap/client.mjs <fixture.json>
 * Prints `RESULT node-soap <soap11|soap12> <check> PASS|FAIL <detail>` per check (see scripts/test-clients.mjs).
 */
import { readFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import process from 'node:process';
import { URL, URLSearchParams } from 'node:url';
import soap from 'soap';

const CLIENT = 'node-soap';
const fx = JSON.parse(readFileSync(process.argv[2], 'utf8'));

function report(protocol, check, ok, detail = '') {
  const text = String(detail).replace(/\s+/g, ' ').slice(0, 300);
  process.stdout.write(`RESULT ${CLIENT} ${protocol} ${check} ${ok ? 'PASS' : 'FAIL'} ${text}\n`);
}

/** Runs one check; an exception fails it with its message. */
async function check(protocol, name, fn) {
  try {
    const [ok, detail] = await fn();
    report(protocol, name, ok, detail);
  } catch (error) {
    report(protocol, name, false, `${error?.constructor?.name ?? 'Error'}: ${error?.message ?? error}`);
  }
}

function version() {
  const require = createRequire(import.meta.url);
  const pkg = JSON.parse(readFileSync(require.resolve('soap/package.json'), 'utf8'));
  return `soap ${pkg.version} on Node ${process.version}`;
}

const asArray = (v) => (v === undefined || v === null ? [] : Array.isArray(v) ? v : [v]);

/**
 * node-soap parses the WhatsNewResult <s:any> content (xs:schema + diffgram) into plain objects;
 * type the row values from the xs:schema part, as a DataTable reader would.
 */
function readDataTable(result) {
  const schema = result?.schema;
  const tableElement = schema?.element?.complexType?.choice?.element;
  const columns = asArray(tableElement?.complexType?.sequence?.element).map((e) => ({ name: e.attributes.name, type: e.attributes.type }));
  const tableName = tableElement?.attributes?.name;
  const rows = asArray(result?.diffgram?.DocumentElement?.[tableName]).map((row) => {
    const out = {};
    for (const { name, type } of columns) {
      const raw = row[name];
      if (raw === undefined) out[name] = undefined;
      else if (type === 'xs:int') out[name] = Number.parseInt(raw, 10);
      else if (type === 'xs:dateTime') out[name] = new Date(raw);
      else out[name] = raw ?? ''; // node-soap gives null for an empty element such as <Url />
    }
    return out;
  });
  return { tableName, columns, rows };
}

function compareNews(table) {
  const expectedColumns = fx.columns.map(([n, t]) => `${n}:${t === 'dateTime' ? 'xs:dateTime' : `xs:${t}`}`).join(',');
  const gotColumns = table.columns.map((c) => `${c.name}:${c.type}`).join(',');
  if (gotColumns !== expectedColumns) return [false, `columns ${gotColumns} != ${expectedColumns}`];
  if (table.rows.length !== fx.news.length) return [false, `${table.rows.length} rows, expected ${fx.news.length}`];
  for (let i = 0; i < fx.news.length; i++) {
    const want = fx.news[i];
    const got = table.rows[i];
    const expected = { NewsID: want.newsId, AppID: want.appId, Title: want.title, Body: want.body, Language: want.language, Url: want.url };
    for (const [key, value] of Object.entries(expected)) {
      if (got[key] !== value) return [false, `row ${i} ${key} ${JSON.stringify(got[key])} != ${JSON.stringify(value)}`];
    }
    if (!(got.PublishedAt instanceof Date) || got.PublishedAt.getTime() !== Date.parse(want.publishedAt)) {
      return [false, `row ${i} PublishedAt ${got.PublishedAt?.toISOString?.()} != ${want.publishedAt}`];
    }
  }
  return [true, `${table.rows.length} rows; NewsID=[${table.rows.map((r) => r.NewsID)}]; PublishedAt[0]=${table.rows[0].PublishedAt.toISOString()}`];
}

function call(port, op, args) {
  return new Promise((resolve, reject) => {
    port[op](args, (err, result) => (err ? reject(err) : resolve(result)));
  });
}

/**
 * One protocol: SOAP 1.1 on the AuthenticationSoap port, or SOAP 1.2 on AuthenticationSoap12 with
 * `forceSoap12Headers` (node-soap otherwise sends SOAP 1.1 envelopes whatever the port).
 * The port is named explicitly: node-soap's top-level client.Op() methods belong to the last port
 * in the WSDL (here AuthenticationSoap12).
 */
async function runProtocol(protocol, portName, options) {
  let client = null;
  let port = null;
  await check(protocol, 'wsdl', async () => {
    client = await soap.createClientAsync(fx.wsdl, options);
    port = client.Authentication[portName];
    const ops = Object.keys(client.describe().Authentication[portName]);
    return [ops.length === 6, `port ${portName}: ${ops.join(',')}`];
  });
  if (port === null) {
    for (const c of ['login-ok', 'login-bad', 'token-ok', 'token-bad', 'whatsnew', 'login-url', 'json-user', 'json-token', 'fault']) report(protocol, c, false, 'no client (WSDL did not load)');
    return;
  }
  const good = { login: fx.login, password: fx.password, AppId: fx.appId, IPAddress: '' };

  let token = null;
  await check(protocol, 'login-ok', async () => {
    const r = await call(port, 'ValidateUser', good);
    token = r?.ValidateUserResult ?? null;
    const contentType = String(client.lastRequestHeaders?.['Content-Type'] ?? '');
    const expectedType = protocol === 'soap12' ? 'application/soap+xml' : 'text/xml';
    return [typeof token === 'string' && token.length >= 16 && contentType.startsWith(expectedType), `token ${JSON.stringify(token)} (${contentType})`];
  });
  await check(protocol, 'login-bad', async () => {
    const r = await call(port, 'ValidateUser', { ...good, password: fx.badPassword });
    const v = r?.ValidateUserResult;
    return [v === '' || v === null || v === undefined, `result ${JSON.stringify(v)}`];
  });
  await check(protocol, 'token-ok', async () => {
    const r = await call(port, 'ValidateUserToken', { token });
    return [r?.ValidateUserTokenResult === true, `result ${JSON.stringify(r?.ValidateUserTokenResult)}`];
  });
  await check(protocol, 'token-bad', async () => {
    const r = await call(port, 'ValidateUserToken', { token: 'not-a-token-0000' });
    return [r?.ValidateUserTokenResult === false, `result ${JSON.stringify(r?.ValidateUserTokenResult)}`];
  });
  await check(protocol, 'whatsnew', async () => {
    const r = await call(port, 'WhatsNew', { AppToken: '', AppID: fx.appId, AppVersion: '', Language: 'en', qtyNews: fx.qtyNews });
    const [ok, detail] = compareNews(readDataTable(r?.WhatsNewResult));
    if (!ok) return [ok, detail];
    // An empty table (qtyNews = 0): schema, empty diffgram.
    const empty = readDataTable((await call(port, 'WhatsNew', { AppToken: '', AppID: fx.appId, AppVersion: '', Language: 'en', qtyNews: 0 }))?.WhatsNewResult);
    return [empty.rows.length === 0 && empty.columns.length === fx.columns.length, `${detail}; qtyNews=0: ${empty.rows.length} rows, ${empty.columns.length} columns`];
  });
  await check(protocol, 'login-url', async () => {
    const r = await call(port, 'GetUserLoginURL', { token, AppID: fx.appId });
    const url = r?.GetUserLoginURLResult;
    if (typeof url !== 'string' || !url.startsWith(`${fx.loginUrl}&ticket=`) && !url.startsWith(`${fx.loginUrl}?ticket=`)) return [false, `url ${JSON.stringify(url)}`];
    const ticket = new URL(url).searchParams.get('ticket');
    const first = (await call(port, 'ValidateUserToken', { token: ticket }))?.ValidateUserTokenResult;
    const second = (await call(port, 'ValidateUserToken', { token: ticket }))?.ValidateUserTokenResult;
    return [first === true && second === false, `${url} -> first ${first}, second ${second}`];
  });

  // The JSON operations declare no parameters; they read them from the request (query string),
  // so they are called on an endpoint address that carries them. setEndpoint() rebuilds the
  // port objects, hence portAt() fetches the port again.
  const portAt = (endpoint) => {
    client.setEndpoint(endpoint);
    return client.Authentication[portName];
  };
  let jsonToken = null;
  await check(protocol, 'json-user', async () => {
    const q = new URLSearchParams({ login: fx.login, password: fx.password, AppId: String(fx.appId) });
    let text;
    try {
      text = (await call(portAt(`${fx.endpoint}?${q}`), 'ValidateUserJSON', {}))?.ValidateUserJSONResult;
    } finally {
      port = portAt(fx.endpoint);
    }
    const json = JSON.parse(text);
    jsonToken = json.token;
    const valid = (await call(port, 'ValidateUserToken', { token: json.token }))?.ValidateUserTokenResult;
    return [json.success === true && typeof json.token === 'string' && valid === true, `${text}; token valid=${valid}`];
  });
  await check(protocol, 'json-token', async () => {
    let good;
    let bad;
    try {
      good = (await call(portAt(`${fx.endpoint}?${new URLSearchParams({ token: jsonToken ?? token ?? '' })}`), 'ValidateUserTokenJSON', {}))?.ValidateUserTokenJSONResult;
      bad = (await call(portAt(`${fx.endpoint}?token=garbage`), 'ValidateUserTokenJSON', {}))?.ValidateUserTokenJSONResult;
    } finally {
      port = portAt(fx.endpoint);
    }
    const g = JSON.parse(good);
    const b = JSON.parse(bad);
    return [g.valid === true && b.valid === false, `${good} / ${bad}`];
  });

  // node-soap does not check types: AppID "abc" goes on the wire, and the service faults.
  await check(protocol, 'fault', async () => {
    try {
      const r = await call(port, 'WhatsNew', { AppToken: '', AppID: 'abc', AppVersion: '', Language: '', qtyNews: 1 });
      return [false, `no error; result ${JSON.stringify(r).slice(0, 100)}`];
    } catch (error) {
      const fault = error?.root?.Envelope?.Body?.Fault;
      // SOAP 1.1: faultcode / faultstring; SOAP 1.2: Code.Value / Reason.Text.
      const code = fault?.faultcode ?? fault?.Code?.Value;
      const reason = fault?.Reason?.Text;
      const text = fault?.faultstring ?? (typeof reason === 'object' ? reason?.$value : reason) ?? '';
      const expectedCode = protocol === 'soap12' ? 'soap:Sender' : 'soap:Client';
      return [fault !== undefined && code === expectedCode && String(text).includes(fx.soapFaultText), `${error.constructor.name} root.Envelope.Body.Fault ${code}: ${text}`];
    }
  });
}

async function main() {
  process.stdout.write(`VERSION ${CLIENT} ${version()}\n`);
  await runProtocol('soap11', 'AuthenticationSoap', {});
  await runProtocol('soap12', 'AuthenticationSoap12', { forceSoap12Headers: true });
}

main().catch((error) => {
  process.stderr.write(`${error.stack ?? error}\n`);
  process.exitCode = 1;
});
