import { describe, expect, it } from 'vitest';
import { passwordCandidates } from '../../src/domain/password-candidates.js';

describe('passwordCandidates (PRECIS OpaqueString, RFC 8265)', () => {
  it('tries a prepared form that differs first, then the text as sent (hashes made before the profile)', () => {
    // e + COMBINING ACUTE ACCENT is NFC é; NO-BREAK SPACE becomes U+0020.
    expect(passwordCandidates('cafe\u0301\u00a0bar')).toEqual({ first: 'caf\u00e9 bar', asSent: 'cafe\u0301\u00a0bar' });
  });

  it('tries a password once when preparing changes nothing', () => {
    expect(passwordCandidates('correct horse')).toEqual({ first: 'correct horse', asSent: null });
  });

  it('tries a password the profile refuses as sent, once', () => {
    expect(passwordCandidates('a\u0007b')).toEqual({ first: 'a\u0007b', asSent: null });
    expect(passwordCandidates('')).toEqual({ first: '', asSent: null });
  });

  it('tries a missing password as the empty text', () => {
    expect(passwordCandidates(null)).toEqual({ first: '', asSent: null });
  });
});
