import { describe, expect, it } from 'vitest';
import { compareVersions, parseClientVersion, parseVersion, versionInRange } from '../../src/domain/versions.js';

const v = (text: string): readonly string[] => {
  const parsed = parseVersion(text);
  if (parsed === null) throw new Error(`bad version ${text}`);
  return parsed;
};

describe('versions', () => {
  it('accepts dotted numbers only for operator-given bounds', () => {
    for (const good of ['1', '2.5', '10.0.3', '007.1', '1.2.3.4']) expect(parseVersion(good)).not.toBeNull();
    for (const bad of ['', '1.', '.1', '1..2', '1.x', 'v1', '1.2-beta', ' 1.2', '-1']) expect(parseVersion(bad)).toBeNull();
  });

  it('compares component by component as numbers, missing components counting as zero', () => {
    expect(compareVersions(v('2.10'), v('2.9'))).toBeGreaterThan(0);
    expect(compareVersions(v('2.5'), v('2.5.0'))).toBe(0);
    expect(compareVersions(v('2.5.0.1'), v('2.5'))).toBeGreaterThan(0);
    expect(compareVersions(v('02.05'), v('2.5'))).toBe(0);
    expect(compareVersions(v('1.99999999999999999999'), v('1.99999999999999999998'))).toBeGreaterThan(0);
    expect(compareVersions(v('3'), v('10'))).toBeLessThan(0);
  });

  it('reads the leading dotted numbers of a client version', () => {
    expect(parseClientVersion('2.5.1-beta')).toEqual(['2', '5', '1']);
    expect(parseClientVersion('3.0 (build 77)')).toEqual(['3']);
    expect(parseClientVersion('beta')).toBeNull();
  });

  it('admits a version within inclusive bounds', () => {
    expect(versionInRange('1.5', '1.5', '2.0')).toBe(true);
    expect(versionInRange('2.0.0', '1.5', '2')).toBe(true);
    expect(versionInRange('2.0.1', '1.5', '2')).toBe(false);
    expect(versionInRange('1.4.9', '1.5', null)).toBe(false);
    expect(versionInRange('9', null, '10')).toBe(true);
  });

  it('lets an empty AppVersion see everything, and an unreadable one only unbounded items', () => {
    expect(versionInRange('', '5', '6')).toBe(true);
    expect(versionInRange(null, '5', '6')).toBe(true);
    expect(versionInRange('latest', '5', null)).toBe(false);
    expect(versionInRange('latest', null, null)).toBe(true);
  });
});
