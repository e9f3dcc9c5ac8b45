/**
 * `svcapi-auth news import`: from a stand-in legacy service (our own app answering with a
 * non-default profile: table Noticias, Portuguese columns, attributes, Unspecified DateTimes in
 * São Paulo) into a fresh instance with the same profile, then WhatsNew compared byte for byte on
 * the four bindings; from a CSV export; and against hostile stand-ins.
 */
import { spawnSync } from 'node:child_process';
import { createServer, type Server, type ServerResponse } from 'node:http';
import { createServer as createHttpsServer } from 'node:https';
import type { AddressInfo } from 'node:net';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import Database from 'better-sqlite3';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { readCompatProfile } from '../../src/compat-profile-file.js';
import type { CompatProfile } from '../../src/contract/compat-profile.js';
import { BINDINGS, buildRequest, type Args } from '../support/asmx-client.js';
import { createTestStack, startApp, type StartedApp, type TestStack } from '../support/start-app.js';
import { run } from './support.js';

const ZONE = 'America/Sao_Paulo';
const dir = mkdtempSync(join(tmpdir(), 'svcapi-news-import-'));
const profileFile = join(dir, 'noticias.json');
writeFileSync(profileFile, JSON.stringify({
  description: 'the legacy news table',
  whatsNew: {
    tableName: 'Noticias',
    columns: [
      { name: 'IdNoticia', type: 'int', from: { field: 'newsId' } },
      { name: 'Titulo', type: 'string', from: { field: 'title' } },
      { name: 'Texto', type: 'string', from: { field: 'body' } },
      { name: 'Idioma', type: 'string', from: { field: 'language' } },
      { name: 'Link', type: 'string', from: { field: 'url' } },
      { name: 'DataPublicacao', type: 'dateTime', from: { field: 'publishedAt' } },
      { name: 'Destaque', type: 'boolean', from: { attribute: 'Destaque' } },
      { name: 'Categoria', type: 'string', from: { attribute: 'Categoria' } },
    ],
    dateTimes: 'unspecified',
  },
}));
const compat: CompatProfile = readCompatProfile(profileFile);

const must = <T>(r: { ok: true; value: T } | { ok: false; message: string }): T => {
  if (!r.ok) throw new Error(r.message);
  return r.value;
};

let legacy: StartedApp;
const stacks: TestStack[] = [];
afterAll(async () => {
  await legacy.close();
  for (const s of stacks) await s.close();
  rmSync(dir, { recursive: true, force: true });
});

beforeAll(async () => {
  legacy = await startApp({ timeZone: ZONE, profile: compat, throttle: false });
  const admin = legacy.stack.admin;
  must(await admin.updateApplication(2, { defaultLanguage: 'pt-BR' }));
  // Ids with gaps, as a long-lived legacy table has them.
  await legacy.stack.store.insertNews({ appId: 2, language: 'en', title: 'gap', body: '', url: null, publishedAt: new Date(0), expiresAt: null, minVersion: null, maxVersion: null, membersOnly: false, createdAt: new Date(0) });
  must(await admin.addNews({
    appId: 2, language: 'pt-BR', title: 'Bem-vindo & <olá>', body: 'linha 1\nlinha 2 "aspas"', url: 'https://gps.example/n/1?a=1&b=2',
    publishedAt: new Date('2018-01-10T10:30:00.120Z'), attributes: { Destaque: 'true', Categoria: 'Promoção' },
  }));
  must(await admin.addNews({ appId: 2, language: 'pt-BR', title: 'Sem link', body: '', publishedAt: new Date('2020-03-01T12:00:00Z'), attributes: { Destaque: 'false' } }));
  must(await admin.addNews({ appId: 2, language: 'pt-BR', title: 'Só versão 2+', body: 'v2', minVersion: '2.0', publishedAt: new Date('2020-04-01T00:00:00Z') }));
  must(await admin.addNews({ appId: 2, language: 'pt-BR', title: 'Membros', body: 'm', membersOnly: true, publishedAt: new Date('2020-05-01T00:00:00Z') }));
  must(await admin.addNews({ appId: 2, language: 'en', title: 'Welcome', body: 'hi', publishedAt: new Date('2020-02-01T09:00:00Z'), attributes: { Categoria: 'News' } }));
  await legacy.stack.store.deleteNews(1);
});

async function freshTarget(): Promise<TestStack> {
  const stack = await createTestStack({ timeZone: ZONE, profile: compat, throttle: false });
  stacks.push(stack);
  must(await stack.admin.updateApplication(2, { defaultLanguage: 'pt-BR' }));
  return stack;
}

async function whatsNewBody(app: TestStack['app'], binding: (typeof BINDINGS)[number], args: Args): Promise<{ status: number; body: string }> {
  const req = buildRequest(binding, 'WhatsNew', args);
  const res = await app.inject({ method: req.method, url: req.url, headers: req.headers, ...(req.payload !== undefined && { payload: req.payload }) });
  return { status: res.statusCode, body: res.body };
}

const QUESTIONS: Args[] = [
  { AppToken: '', AppID: 2, AppVersion: '2.5', Language: 'pt-BR', qtyNews: 10 },
  { AppToken: '', AppID: 2, AppVersion: '2.5', Language: 'en', qtyNews: 10 },
  { AppToken: '', AppID: 2, AppVersion: '2.5', Language: '', qtyNews: 2 },
];

async function expectSameWhatsNew(target: TestStack): Promise<void> {
  for (const binding of BINDINGS) {
    for (const args of QUESTIONS) {
      const theirs = await whatsNewBody(legacy.stack.app, binding, args);
      const ours = await whatsNewBody(target.app, binding, args);
      expect(theirs.status).toBe(200);
      expect(theirs.body).toContain('<Titulo>');
      expect(ours, `${binding} ${JSON.stringify(args)}`).toEqual(theirs);
    }
  }
}

const db = (stack: TestStack): string => `sqlite:${stack.dbPath}`;
const legacyUrl = (): string => `${legacy.url}/Authentication.asmx`;

describe('news import --from-legacy', () => {
  it('stores what the legacy shows, with its ids, dates and attributes: WhatsNew answers the same bytes on every binding; a second run adds nothing', async () => {
    const theirs = await whatsNewBody(legacy.stack.app, 'soap11', QUESTIONS[0] ?? {});
    expect(theirs.body).toContain('<DataPublicacao>2018-01-10T08:30:00.12</DataPublicacao><Destaque>true</Destaque><Categoria>Promoção</Categoria>');

    const target = await freshTarget();
    const args = ['news', 'import', '--from-legacy', legacyUrl(), '--app', '2', '--language', 'pt-BR', '--language', 'en', '--app-version', '2.5',
      '--compat', profileFile, '--time-zone', ZONE, '--db', db(target)];
    const first = await run(args);
    expect(first.err).toBe('');
    expect(first).toMatchObject({ code: 0, out: 'Imported 4 news, 0 already present, 0 skipped\n' });
    await expectSameWhatsNew(target);
    expect((await target.store.listNews()).map((n) => n.newsId)).toEqual((await legacy.stack.store.listNews()).filter((n) => !n.membersOnly).map((n) => n.newsId));

    const second = await run(args);
    expect(second).toMatchObject({ code: 0, out: 'Imported 0 news, 4 already present, 0 skipped\n' });
    expect(await target.store.listNews()).toHaveLength(4);
    await expectSameWhatsNew(target);

    // A change of an attribute (raw SQL) reaches WhatsNew on the next request: the news revision moved.
    const raw = new Database(target.dbPath);
    raw.prepare(`UPDATE news SET attributes = json_set(attributes, '$.Destaque', 'false') WHERE title = 'Bem-vindo & <olá>'`).run();
    raw.close();
    expect((await whatsNewBody(target.app, 'soap11', QUESTIONS[0] ?? {})).body).toContain('<Destaque>false</Destaque><Categoria>Promoção</Categoria>');
  });

  it('names a legacy whose table is not the profile\'s, and stores nothing', async () => {
    const target = await freshTarget();
    const r = await run(['news', 'import', '--from-legacy', legacyUrl(), '--app', '2', '--time-zone', ZONE, '--db', db(target)]);
    expect(r.code).toBe(1);
    expect(r.err).toMatch(/the legacy's table is named "Noticias", the compatibility profile's whatsNew.tableName is "News"/);
    expect(await target.store.listNews()).toEqual([]);
  });

  it('refuses bad arguments before calling anything', async () => {
    for (const [args, message] of [
      [['--app', '2'], /exactly one of --from-legacy <url> and --csv <file>/],
      [['--from-legacy', 'ftp://x/', '--app', '2'], /expected an http\(s\) URL/],
      [['--from-legacy', 'http://127.0.0.1:9/', '--app', '0'], /expected an AppID/],
      [['--from-legacy', 'http://127.0.0.1:9/', '--app', '2', '--language', '!!'], /not a language tag/],
      [['--csv', 'x.csv', '--app', '2', '--qty', '5'], /are for --from-legacy/],
      [['--from-legacy', 'http://127.0.0.1:9/', '--app', '404'], /no application with AppID 404/],
    ] as const) {
      const r = await run(['news', 'import', ...args]);
      expect(r.code, args.join(' ')).not.toBe(0);
      expect(r.err, args.join(' ')).toMatch(message);
    }
  });
});

describe('news import --from-legacy against a hostile stand-in', () => {
  let server: Server;
  let behaviour: (res: ServerResponse) => void = () => undefined;
  let base = '';
  beforeAll(async () => {
    server = createServer((req, res) => {
      req.resume();
      req.on('end', () => behaviour(res));
    });
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    base = `http://127.0.0.1:${(server.address() as AddressInfo).port}/Authentication.asmx`;
  });
  afterAll(async () => {
    server.closeAllConnections();
    await new Promise<void>((resolve) => server.close(() => resolve()));
  });

  const soap = (inner: string): string => `<?xml version="1.0" encoding="utf-8"?><soap:Envelope xmlns:soap="http://schemas.xmlsoap.org/soap/envelope/"><soap:Body>${inner}</soap:Body></soap:Envelope>`;
  const answer = (status: number, body: string, headers: Record<string, string> = {}) => (res: ServerResponse): void => {
    res.writeHead(status, { 'content-type': 'text/xml; charset=utf-8', ...headers });
    res.end(body);
  };
  const table = (rows: string): string => soap('<WhatsNewResponse xmlns="SVCAPI"><WhatsNewResult><xs:schema id="NewDataSet" xmlns="" xmlns:xs="http://www.w3.org/2001/XMLSchema" xmlns:msdata="urn:schemas-microsoft-com:xml-msdata">'
    + '<xs:element name="NewDataSet" msdata:IsDataSet="true" msdata:MainDataTable="Noticias"><xs:complexType><xs:choice minOccurs="0" maxOccurs="unbounded"><xs:element name="Noticias"><xs:complexType><xs:sequence>'
    + '<xs:element name="IdNoticia" type="xs:int" minOccurs="0" /><xs:element name="Titulo" type="xs:string" minOccurs="0" /><xs:element name="DataPublicacao" type="xs:dateTime" minOccurs="0" /><xs:element name="Extra" type="xs:string" minOccurs="0" />'
    + '</xs:sequence></xs:complexType></xs:element></xs:choice></xs:complexType></xs:element></xs:schema>'
    + `<diffgr:diffgram xmlns:msdata="urn:schemas-microsoft-com:xml-msdata" xmlns:diffgr="urn:schemas-microsoft-com:xml-diffgram-v1"><DocumentElement xmlns="">${rows}</DocumentElement></diffgr:diffgram></WhatsNewResult></WhatsNewResponse>`);

  async function importFrom(url: string, extra: string[] = []): Promise<{ code: number; out: string; err: string; stored: number }> {
    const target = await freshTarget();
    const r = await run(['news', 'import', '--from-legacy', url, '--app', '2', '--compat', profileFile, '--time-zone', ZONE, '--timeout', '2s', '--db', db(target), ...extra]);
    expect(r.err).not.toMatch(/\n\s+at /); // never a stack trace
    return { ...r, stored: (await target.store.listNews()).length };
  }

  it('reports each kind of bad answer and stores nothing', async () => {
    // An old service that never answers is given the shortest --timeout (1s): the others keep 2s,
    // room to send 20 MB on a busy machine.
    const cases: [typeof behaviour, RegExp, string[]?][] = [
      [answer(200, '<html>oops'), /not well-formed XML/],
      [answer(200, '<?xml version="1.0"?><!DOCTYPE x [<!ENTITY a "aaaa">]><x>&a;</x>'), /XML with a DTD \(refused\)/],
      [answer(200, soap('<Other xmlns="SVCAPI" />')), /no WhatsNewResponse\/WhatsNewResult/],
      [answer(500, soap('<soap:Fault><faultcode>soap:Server</faultcode><faultstring>Boom in the\n\tlegacy</faultstring></soap:Fault>')), /SOAP fault: "Boom in the legacy"/],
      [answer(302, '', { location: 'http://127.0.0.1:1/elsewhere' }), /redirect \(refused\)/],
      [answer(404, 'no'), /HTTP 404/],
      [answer(200, soap('<WhatsNewResponse xmlns="SVCAPI"><WhatsNewResult>text</WhatsNewResult></WhatsNewResponse>')), /no inline xs:schema/],
      [answer(200, `<a>${'<b/>'.repeat(20_000)}</a>`), /too many elements/],
      [answer(200, table('<Noticias><IdNoticia>1</IdNoticia></Noticias>'.repeat(3))), /holds 3 rows, more than the 2 asked for/],
      [(res) => {
        res.writeHead(200, { 'content-type': 'text/xml' });
        const chunk = Buffer.alloc(1024 * 1024, 'a');
        let sent = 0;
        const more = (): void => {
          while (sent < 20 && res.write(chunk)) sent++;
          if (sent < 20) res.once('drain', more);
          else res.end();
        };
        more();
      }, /larger than 16777216 bytes/],
      [() => undefined, /no complete answer within 1000 ms/, ['--timeout', '1s']],
    ];
    for (const [b, message, extra = []] of cases) {
      behaviour = b;
      const r = await importFrom(base, ['--qty', '2', ...extra]);
      expect(r.code, String(message)).toBe(1);
      expect(r.err, String(message)).toMatch(message);
      expect(r.stored, String(message)).toBe(0);
    }
  }, 60_000);

  it('says when the service is down', async () => {
    const closed = createServer();
    await new Promise<void>((resolve) => closed.listen(0, '127.0.0.1', resolve));
    const port = (closed.address() as AddressInfo).port;
    await new Promise<void>((resolve) => closed.close(() => resolve()));
    const r = await importFrom(`http://127.0.0.1:${port}/Authentication.asmx`);
    expect(r.code).toBe(1);
    expect(r.err).toMatch(/the connection failed/);
  });

  it('trusts legacy.caFile for an https old service, as serve does', async () => {
    const certFile = join(dir, 'cert.pem');
    const keyFile = join(dir, 'key.pem');
    const openssl = spawnSync('openssl', [
      'req', '-x509', '-newkey', 'rsa:2048', '-nodes', '-subj', '/CN=localhost', '-days', '1',
      '-addext', 'subjectAltName=DNS:localhost,IP:127.0.0.1', '-keyout', keyFile, '-out', certFile,
    ], { encoding: 'utf8' });
    if (openssl.status !== 0) throw new Error(`openssl failed: ${openssl.stderr}`);
    const secure = createHttpsServer({ cert: readFileSync(certFile), key: readFileSync(keyFile) }, (req, res) => {
      req.resume();
      req.on('end', () => answer(200, table('<Noticias diffgr:id="Noticias1" msdata:rowOrder="0"><IdNoticia>5</IdNoticia><Titulo>seguro</Titulo><DataPublicacao>2020-01-01T10:00:00</DataPublicacao></Noticias>'))(res));
    });
    await new Promise<void>((resolve) => secure.listen(0, '127.0.0.1', resolve));
    const url = `https://localhost:${(secure.address() as AddressInfo).port}/Authentication.asmx`;
    try {
      const untrusted = await importFrom(url);
      expect(untrusted.code).toBe(1);
      expect(untrusted.err).toMatch(/TLS failed \(DEPTH_ZERO_SELF_SIGNED_CERT\)/);
      const target = await freshTarget();
      const trusted = await run(['news', 'import', '--from-legacy', url, '--app', '2', '--compat', profileFile, '--time-zone', ZONE, '--db', db(target)],
        { SVCAPI_LEGACY_URL: url, SVCAPI_LEGACY_CA_FILE: certFile });
      expect(trusted.err).not.toMatch(/TLS/);
      expect(trusted.out).toContain('Imported 1 news');
      expect((await target.store.listNews()).map((n) => n.title)).toStrictEqual(['seguro']);
    } finally {
      secure.closeAllConnections();
      await new Promise<void>((resolve) => secure.close(() => resolve()));
    }
  });

  it('skips rows it cannot read, with the reason, imports the rest, and warns about columns the profile and the legacy do not share', async () => {
    behaviour = answer(200, table(
      '<Noticias diffgr:id="Noticias1" msdata:rowOrder="0"><IdNoticia>5</IdNoticia><Titulo>ok</Titulo><DataPublicacao>2020-01-01T10:00:00</DataPublicacao><Extra>x</Extra></Noticias>'
      + '<Noticias diffgr:id="Noticias2" msdata:rowOrder="1"><IdNoticia>6</IdNoticia><Titulo>bad date</Titulo><DataPublicacao>ontem</DataPublicacao></Noticias>'
      + '<Noticias diffgr:id="Noticias3" msdata:rowOrder="2"><IdNoticia>7</IdNoticia><DataPublicacao>2020-01-01T10:00:00</DataPublicacao></Noticias>'
      + '<Noticias diffgr:id="Noticias4" msdata:rowOrder="3"><Titulo>no id</Titulo><DataPublicacao>2020-01-01T10:00:00</DataPublicacao></Noticias>',
    ));
    const r = await importFrom(base);
    expect(r.code, r.err).toBe(0);
    expect(r.stored).toBe(1);
    expect(r.out).toContain('Imported 1 news, 0 already present, 3 skipped\n');
    expect(r.out).toContain('  skipped 1: unreadable cell DataPublicacao: not a DateTime\n');
    expect(r.out).toContain('  skipped 1: the title must be 1 to 500 characters\n');
    expect(r.out).toContain('  skipped 1: no NewsID (1 or more) in the row\n');
    expect(r.err).toContain('warning: column Texto of the profile is not in the legacy\'s table: its value is not imported\n');
    expect(r.err).toContain('warning: the legacy\'s column "Extra" is not in the profile: its values are not imported\n');
  });
});

describe('news import --csv', () => {
  it('reads an export of the legacy table through the profile: the same WhatsNew bytes', async () => {
    const shown = (await legacy.stack.store.listNews()).filter((n) => !n.membersOnly);
    // As SQL Server Management Studio exports: local times without offset, bits as 1/0, NULL as an empty field.
    const local = (d: Date): string => new Date(d.getTime() - 3 * 3600_000 + (d.getTime() < Date.UTC(2019, 0, 1) ? 3600_000 : 0)).toISOString().replace('T', ' ').replace('Z', '');
    const field = (v: string): string => `"${v.replace(/"/g, '""')}"`;
    const lines = ['IdNoticia;Titulo;Texto;Idioma;Link;DataPublicacao;Destaque;Categoria'];
    for (const n of shown) {
      lines.push([String(n.newsId), field(n.title), field(n.body), n.language, n.url ?? '', local(n.publishedAt),
        n.attributes.Destaque === undefined ? '' : n.attributes.Destaque === 'true' ? '1' : '0', n.attributes.Categoria ?? ''].join(';'));
    }
    const file = join(dir, 'noticias.csv');
    writeFileSync(file, `\ufeff${lines.join('\r\n')}\r\n`);
    const target = await freshTarget();
    const r = await run(['news', 'import', '--csv', file, '--delimiter', ';', '--app', '2', '--compat', profileFile, '--time-zone', ZONE, '--db', db(target)]);
    expect(r.err).toBe('');
    expect(r).toMatchObject({ code: 0, out: 'Imported 4 news, 0 already present, 0 skipped\n' });
    await expectSameWhatsNew(target);
    expect(await run(['news', 'import', '--csv', file, '--delimiter', ';', '--app', '2', '--compat', profileFile, '--time-zone', ZONE, '--db', db(target)]))
      .toMatchObject({ code: 0, out: 'Imported 0 news, 4 already present, 0 skipped\n' });
    expect(await run(['news', 'import', '--csv', join(dir, 'missing.csv'), '--app', '2', '--db', db(target)])).toMatchObject({ code: 1, err: expect.stringMatching(/no such file/) });
  });
});
