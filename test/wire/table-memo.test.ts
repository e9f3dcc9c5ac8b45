/** Rendered DataTables remembered by identity of a frozen table (src/wire/table-memo.ts). */
import { describe, expect, it } from 'vitest';
import { compileContract } from '../../src/wire/compiled-contract.js';
import type { Row } from '../../src/wire/datatable.js';
import { writeHttpResult, writeHttpResultBody } from '../../src/wire/http-result.js';
import { writeSoapResult, writeSoapResultBody } from '../../src/wire/soap-result.js';
import { encodeTableOnce, renderTableOnce } from '../../src/wire/table-memo.js';

const text = (body: string | Buffer): string => (typeof body === 'string' ? body : body.toString('utf8'));

const frozenTable = (): readonly Row[] => Object.freeze([
  Object.freeze([1, 2, 'T <1>', 'B & b', 'en', '', new Date('2020-01-01T10:30:00Z')]),
  Object.freeze([2, 2, 'x', 'y', 'en', 'https://x.example/?a=1&b=2', new Date('2020-07-01T10:30:00.5Z')]),
]);

describe('renderTableOnce', () => {
  it('renders a frozen table of frozen rows once per shape', () => {
    const rows = frozenTable();
    const shapeA = {};
    const shapeB = {};
    let calls = 0;
    const render = (text: string) => (): string => {
      calls++;
      return text;
    };
    expect(renderTableOnce(rows, shapeA, render('a'))).toBe('a');
    expect(renderTableOnce(rows, shapeA, render('other'))).toBe('a');
    expect(renderTableOnce(rows, shapeB, render('b'))).toBe('b');
    expect(renderTableOnce(rows, shapeB, render('other'))).toBe('b');
    expect(calls).toBe(2);
  });

  it('encodes a frozen table once, as the UTF-8 of its text', () => {
    const rows = frozenTable();
    const shape = {};
    let calls = 0;
    const render = (): string => {
      calls++;
      return 'café ✓';
    };
    const bytes = encodeTableOnce(rows, shape, render);
    expect(bytes.toString('utf8')).toBe('café ✓');
    expect(encodeTableOnce(rows, shape, render)).toBe(bytes);
    expect(renderTableOnce(rows, shape, render)).toBe('café ✓');
    expect(calls).toBe(1);
    const mutable: Row[] = [...rows];
    expect(encodeTableOnce(mutable, shape, render)).not.toBe(encodeTableOnce(mutable, shape, render));
  });

  it('renders every time a table that could still change', () => {
    const shape = {};
    const mutable: Row[] = [[1, 2, 'a', 'b', 'en', '', new Date(0)]];
    const frozenOuter = Object.freeze([[1, 2, 'a', 'b', 'en', '', new Date(0)]] as Row[]);
    let calls = 0;
    const render = (): string => String(++calls);
    expect([renderTableOnce(mutable, shape, render), renderTableOnce(mutable, shape, render)]).toEqual(['1', '2']);
    expect([renderTableOnce(frozenOuter, shape, render), renderTableOnce(frozenOuter, shape, render)]).toEqual(['3', '4']);
  });
});

describe('DataTable results of a frozen table', () => {
  it('are the same text as for an equal mutable table, in every binding, per time zone', () => {
    for (const timeZone of ['UTC', 'America/Sao_Paulo', 'Asia/Kolkata']) {
      const contract = compileContract({ timeZone });
      const op = contract.byName.get('WhatsNew');
      if (op === undefined) throw new Error('no WhatsNew');
      const rows = frozenTable();
      const copy = (): Row[] => rows.map((r) => [...r]);
      for (let round = 0; round < 2; round++) {
        expect(writeSoapResult(contract, op, '1.1', rows)).toBe(writeSoapResult(contract, op, '1.1', copy()));
        expect(writeSoapResult(contract, op, '1.2', rows)).toBe(writeSoapResult(contract, op, '1.2', copy()));
        expect(writeHttpResult(contract, op, rows)).toBe(writeHttpResult(contract, op, copy()));
        expect(text(writeSoapResultBody(contract, op, '1.2', rows))).toBe(writeSoapResult(contract, op, '1.2', copy()));
        expect(text(writeHttpResultBody(contract, op, rows))).toBe(writeHttpResult(contract, op, copy()));
        expect(text(writeHttpResultBody(contract, op, copy()))).toBe(writeHttpResult(contract, op, copy()));
      }
    }
  });

  it('as bytes, are the UTF-8 of the text for the other result types too', () => {
    const contract = compileContract({ timeZone: 'UTC' });
    const validate = contract.byName.get('ValidateUserToken');
    const login = contract.byName.get('ValidateUser');
    if (validate === undefined || login === undefined) throw new Error('missing operation');
    expect(text(writeSoapResultBody(contract, validate, '1.1', true))).toBe(writeSoapResult(contract, validate, '1.1', true));
    expect(text(writeHttpResultBody(contract, login, 'a<b é'))).toBe(writeHttpResult(contract, login, 'a<b é'));
  });

  it('are not shared between contracts compiled for different time zones', () => {
    const rows = frozenTable();
    const utc = compileContract({ timeZone: 'UTC' });
    const kolkata = compileContract({ timeZone: 'Asia/Kolkata' });
    const write = (contract: typeof utc): string => {
      const op = contract.byName.get('WhatsNew');
      if (op === undefined) throw new Error('no WhatsNew');
      return writeSoapResult(contract, op, '1.1', rows);
    };
    expect(write(utc)).toContain('<PublishedAt>2020-01-01T10:30:00+00:00</PublishedAt>');
    expect(write(kolkata)).toContain('<PublishedAt>2020-01-01T16:00:00+05:30</PublishedAt>');
    expect(write(utc)).toContain('<PublishedAt>2020-01-01T10:30:00+00:00</PublishedAt>');
  });
});
