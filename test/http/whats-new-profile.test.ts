/** WhatsNew shaped by the compatibility profile's whatsNew: its row cap, constants and field columns. */
import { afterEach, describe, expect, it } from 'vitest';
import { DEFAULT_COMPAT_PROFILE, type NewsTableProfile } from '../../src/contract/compat-profile.js';
import { buildRequest, parseResult, type TableRows } from '../support/asmx-client.js';
import { createTestStack, type TestStack } from '../support/start-app.js';

const stacks: TestStack[] = [];
afterEach(async () => {
  for (const s of stacks.splice(0)) await s.close();
});

async function stackWith(whatsNew: NewsTableProfile, items: number): Promise<TestStack> {
  const stack = await createTestStack({ profile: { ...DEFAULT_COMPAT_PROFILE, whatsNew }, throttle: false });
  stacks.push(stack);
  for (let i = 0; i < items; i++) {
    await stack.store.insertNews({
      appId: 2, language: 'en', title: `n${i}`, body: '', url: null, publishedAt: new Date(Date.UTC(2020, 0, 1) - i * 1000), expiresAt: new Date(Date.UTC(2030, 0, 1)),
      minVersion: '1.0', maxVersion: null, membersOnly: i === 0, createdAt: new Date(0), attributes: i % 2 === 0 ? { Peso: '0.1' } : {},
    });
  }
  return stack;
}

async function rows(stack: TestStack, qtyNews: number, tableName = 'News'): Promise<TableRows> {
  const req = buildRequest('soap11', 'WhatsNew', { AppToken: '', AppID: 2, AppVersion: '1.5', Language: 'en', qtyNews });
  const res = await stack.app.inject({ method: req.method, url: req.url, headers: req.headers, payload: req.payload ?? '' });
  expect(res.statusCode).toBe(200);
  return parseResult('soap11', 'WhatsNew', res.body, tableName) as TableRows;
}

describe('WhatsNew with a profile', () => {
  it('caps the rows at maxRows, below and above svcapi-auth\'s own 100', async () => {
    const small = await stackWith({ ...DEFAULT_COMPAT_PROFILE.whatsNew, maxRows: 2 }, 5);
    expect((await rows(small, 10)).map((r) => r.Title)).toEqual(['n1', 'n2']);
    expect(await rows(small, 1)).toHaveLength(1);
    const large = await stackWith({ ...DEFAULT_COMPAT_PROFILE.whatsNew, maxRows: 150 }, 160);
    expect(await rows(large, 1000)).toHaveLength(150);
    const own = await stackWith(DEFAULT_COMPAT_PROFILE.whatsNew, 160);
    expect(await rows(own, 1000)).toHaveLength(100);
  });

  it('writes constants, the other news fields and typed attributes', async () => {
    const stack = await stackWith({
      dataSetName: 'NewDataSet', tableName: 'Item', maxRows: null, dateTimes: 'utc',
      columns: [
        { name: 'Titulo', type: 'string', from: { field: 'title' } },
        { name: 'Sistema', type: 'string', from: { const: 'GPS' } },
        { name: 'Ativo', type: 'boolean', from: { const: true } },
        { name: 'Expira', type: 'dateTime', from: { field: 'expiresAt' } },
        { name: 'VersaoMin', type: 'string', from: { field: 'minVersion' } },
        { name: 'VersaoMax', type: 'string', from: { field: 'maxVersion' } },
        { name: 'SoMembros', type: 'boolean', from: { field: 'membersOnly' } },
        { name: 'Peso', type: 'double', from: { attribute: 'Peso' } },
      ],
    }, 3);
    expect(await rows(stack, 10, 'Item')).toEqual([
      { Titulo: 'n1', Sistema: 'GPS', Ativo: 'true', Expira: '2030-01-01T00:00:00Z', VersaoMin: '1.0', SoMembros: 'false' },
      { Titulo: 'n2', Sistema: 'GPS', Ativo: 'true', Expira: '2030-01-01T00:00:00Z', VersaoMin: '1.0', SoMembros: 'false', Peso: '0.1' },
    ]);
  });
});
