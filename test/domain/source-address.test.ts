import { describe, expect, it } from 'vitest';
import { addressMatcher, attemptAddress, normalizeIp, parseAddressRange, sourceKey, UNKNOWN_SOURCE } from '../../src/domain/source-address.js';

describe('brute-force sources', () => {
  it('counts an IPv4 address as itself, also when written as IPv4-mapped IPv6', () => {
    expect(sourceKey('192.0.2.1')).toBe('192.0.2.1');
    expect(sourceKey('::ffff:192.0.2.1')).toBe('192.0.2.1');
    expect(sourceKey('::FFFF:192.0.2.1')).toBe('192.0.2.1');
    expect(sourceKey('::ffff:c000:201')).toBe('192.0.2.1');
    expect(sourceKey('0:0:0:0:0:ffff:192.0.2.1')).toBe('192.0.2.1');
  });

  it('counts an IPv6 address as its /64, however it is written', () => {
    const forms = ['2001:db8:1:2:3:4:5:6', '2001:DB8:1:2::9', '2001:0db8:0001:0002:ffff::', '2001:db8:1:2::1.2.3.4', 'fe80::1%eth0'];
    expect(forms.slice(0, 4).map(sourceKey)).toEqual(Array(4).fill('2001:db8:1:2::/64'));
    expect(sourceKey('fe80::1%eth0')).toBe('fe80::/64');
    expect(sourceKey('2001:db8:1:3::1')).toBe('2001:db8:1:3::/64');
    expect(sourceKey('2001:0:0:1::5')).toBe('2001:0:0:1::/64');
    expect(sourceKey('::1')).toBe('::/64');
    expect(sourceKey('::')).toBe('::/64');
  });

  it('puts what is not an address in one "unknown" source', () => {
    for (const text of ['', 'x', '1.2.3', '1.2.3.256', '01.2.3.4', '2001:db8::1::2', null, undefined]) expect(sourceKey(text)).toBe(UNKNOWN_SOURCE);
  });

  it('normalises IPv6 text to RFC 5952 form', () => {
    expect(normalizeIp('2001:DB8:0:0:1:0:0:1')?.text).toBe('2001:db8::1:0:0:1');
    expect(normalizeIp('1:0:0:2:0:0:0:3')?.text).toBe('1:0:0:2::3');
    expect(normalizeIp('1:2:3:4:5:6:7:8')?.text).toBe('1:2:3:4:5:6:7:8');
    expect(normalizeIp('1::')?.text).toBe('1::');
    expect(normalizeIp(' 10.0.0.1 ')).toEqual({ family: 4, text: '10.0.0.1' });
  });

  it('reads addresses and CIDR ranges as an operator writes them', () => {
    expect(parseAddressRange('10.0.0.5')).toMatchObject({ family: 4, prefix: 32, text: '10.0.0.5' });
    expect(parseAddressRange('10.1.0.0/16')).toMatchObject({ family: 4, network: '10.1.0.0', prefix: 16, text: '10.1.0.0/16' });
    expect(parseAddressRange('2001:DB8:0::/48')).toMatchObject({ family: 6, prefix: 48, text: '2001:db8::/48' });
    expect(parseAddressRange('::ffff:10.0.0.5')).toMatchObject({ family: 4, text: '10.0.0.5' });
    for (const bad of ['10.0.0.0/33', '::/129', '1.2.3.4/x', '1.2.3.4/', 'abc', '', 'fe80::1%eth0', '::ffff:1.2.3.4/120', '10.0.0.0/8/8']) {
      expect(parseAddressRange(bad), bad).toBeNull();
    }
  });

  it('matches addresses against lists of addresses and ranges, IPv4-mapped forms included', () => {
    const m = addressMatcher(['10.1.0.0/16', '10.0.0.5', '2001:db8::/32']);
    expect(['10.1.2.3', '::ffff:10.1.2.3', '10.0.0.5', '2001:db8:5::1'].map((a) => m.matches(a))).toEqual([true, true, true, true]);
    expect(['10.0.0.6', '10.2.0.1', '2001:db9::1', '', 'x', null].map((a) => m.matches(a))).toEqual([false, false, false, false, false, false]);
    expect(addressMatcher([]).matches('10.0.0.5')).toBe(false);
  });

  it('counts the declared IPAddress only for a trusted caller, and only when it is an address', () => {
    expect(attemptAddress('10.0.0.5', '203.0.113.9', ['10.0.0.5'])).toBe('203.0.113.9');
    expect(attemptAddress('::ffff:10.0.0.5', '203.0.113.9', ['10.0.0.0/24'])).toBe('203.0.113.9');
    expect(attemptAddress('10.0.0.6', '203.0.113.9', ['10.0.0.5'])).toBe('10.0.0.6');
    expect(attemptAddress('10.0.0.5', 'not-an-ip', ['10.0.0.5'])).toBe('10.0.0.5');
    expect(attemptAddress('10.0.0.5', null, ['10.0.0.5'])).toBe('10.0.0.5');
    expect(attemptAddress('10.0.0.5', '203.0.113.9', [])).toBe('10.0.0.5');
  });
});
