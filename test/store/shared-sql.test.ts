/**
 * Statements written once for both adapters (src/store/shared-sql.ts): SQLite gets the text as
 * written, PostgreSQL the same text with $1..$n, and the values in that order.
 */
import { describe, expect, it } from 'vitest';
import { auditQuerySql, postgresValues, sharedSql, SQL } from '../../src/store/shared-sql.js';

describe('shared SQL', () => {
  it('numbers the parameters in order of first appearance, a repeated name keeping its number', () => {
    const statement = sharedSql('UPDATE t SET a = @now WHERE k = @key AND b < @now');
    expect(statement.sqlite).toBe('UPDATE t SET a = @now WHERE k = @key AND b < @now');
    expect(statement.postgres).toBe('UPDATE t SET a = $1 WHERE k = $2 AND b < $1');
    expect(postgresValues(statement, { key: 'k', now: 5, unused: 1 })).toEqual([5, 'k']);
  });

  it('refuses to send a statement with a value missing', () => {
    expect(() => postgresValues(SQL.deleteNews, {})).toThrow('no value for @newsId');
  });

  it('renders the dialect words for each adapter', () => {
    expect(SQL.touchAdminSession.sqlite).toContain('MAX(last_used_at, @now)');
    expect(SQL.touchAdminSession.postgres).toContain('GREATEST(last_used_at, $1)');
    expect(SQL.purgeAudit.sqlite).not.toContain('SKIP LOCKED');
    expect(SQL.purgeAudit.postgres).toContain('FOR UPDATE SKIP LOCKED');
  });

  it('builds one audit statement per shape of filters, with the values in the adapter\'s form', () => {
    const since = new Date(1000);
    const a = auditQuerySql({ since, login: 'Ann', limit: 10.7 }, (d) => d.getTime());
    const b = auditQuerySql({ since: new Date(2000), login: 'Bob', limit: 3 }, (d) => d.getTime());
    expect(a.key).toBe(b.key);
    expect(a.statement).toBe(b.statement);
    expect(a.params).toEqual({ since: 1000, login: 'Ann', limit: 10 });
    expect(postgresValues(a.statement, a.params)).toEqual([1000, 'Ann', 10]);
    expect(auditQuerySql({ limit: 1 }, (d) => d).statement.sqlite).not.toContain('WHERE');
  });
});
